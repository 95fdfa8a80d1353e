package money

import (
	"encoding/json"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"0", "0"}, {"-0", "0"}, {"12", "12"}, {"12.50", "12.5"}, {"-0.01", "-0.01"},
		{"12345678901234567.89", "12345678901234567.89"},
		{"-0.00", "0"}, {"100", "100"}, {"100.000", "100"}, {"0.10", "0.1"},
		{"1e3", "1000"}, {"2.5E-2", "0.025"}, {"1.25e+2", "125"},
	} {
		d, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if d.String() != c.want {
			t.Errorf("Parse(%q) = %s, want %s", c.in, d, c.want)
		}
	}
	for _, bad := range []string{"", "+1", ".5", "5.", "1/3", " 1", "1 ", "0x10", "NaN", "Inf", "01", "1e1000", "1e", "--1"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func BenchmarkParsePlain(b *testing.B) {
	for b.Loop() {
		if _, err := Parse("250000.25"); err != nil {
			b.Fatal(err)
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	var v struct {
		A Decimal `json:"a"`
	}
	if err := json.Unmarshal([]byte(`{"a": 12345678901234567.89}`), &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	if string(b) != `{"a":12345678901234567.89}` {
		t.Fatalf("round trip = %s", b)
	}
	if err := json.Unmarshal([]byte(`{"a": "10.5"}`), &v); err != nil || v.A.String() != "10.5" {
		t.Fatalf("quoted number: %v %s", err, v.A)
	}
}

func TestScan(t *testing.T) {
	var d Decimal
	for _, src := range []any{"250000.25", []byte("250000.25")} {
		if err := d.Scan(src); err != nil || d.String() != "250000.25" {
			t.Fatalf("Scan(%v) = %s, %v", src, d, err)
		}
	}
	if err := d.Scan(int64(7)); err != nil || d.String() != "7" {
		t.Fatalf("Scan(int64) = %s, %v", d, err)
	}
	if v, _ := MustParse("1.10").Value(); v != "1.1" {
		t.Fatalf("Value = %v", v)
	}
	if d.Scale() != 0 || MustParse("1.25").Scale() != 2 {
		t.Fatal("Scale")
	}
}
