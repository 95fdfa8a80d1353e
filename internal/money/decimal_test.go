package money

import (
	"encoding/json"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"0", "0"}, {"-0", "0"}, {"12", "12"}, {"12.50", "12.5"}, {"-0.01", "-0.01"},
		{"12345678901234567.89", "12345678901234567.89"},
		{"-0.00", "0"}, {"100", "100"}, {"100.000", "100"}, {"0.10", "0.1"},
		{"1e3", "1000"}, {"2.5E-2", "0.025"}, {"1.25e+2", "125"},
		{"0.1e-1", "0.01"}, {"-1.5E+2", "-150"}, {"12.50e1", "125"}, {"0e999", "0"}, {"-0e-5", "0"},
		{"0.0012e3", "1.2"}, {"123e-2", "1.23"}, {"123e-3", "0.123"}, {"123e-5", "0.00123"},
		// Exact however small or large: never rounded to 0 or through float64.
		{"1e-400", "0." + strings.Repeat("0", 399) + "1"},
		{"-2.5e-320", "-0." + strings.Repeat("0", 319) + "25"},
		{"1e999", "1" + strings.Repeat("0", 999)},
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

// TestParseMatchesRational compares Parse with big.Rat's exact reading of
// the same literal over many mantissas and exponents.
func TestParseMatchesRational(t *testing.T) {
	for _, mant := range []string{"0", "1", "-1", "7.25", "-0.5", "12345.678", "0.001", "100.10"} {
		for e := -70; e <= 70; e++ {
			s := mant + "e" + strconv.Itoa(e)
			d, err := Parse(s)
			if err != nil {
				t.Fatalf("Parse(%q): %v", s, err)
			}
			want, _ := new(big.Rat).SetString(s)
			if d.Rat().Cmp(want) != 0 {
				t.Fatalf("Parse(%q) = %s, want %s", s, d, want.FloatString(80))
			}
			if d.String() != canonical(d.String()) || strings.HasPrefix(d.String(), "00") {
				t.Fatalf("Parse(%q) = %q is not canonical", s, d)
			}
		}
	}
	if d := MustParse("1e-400"); d.Scale() != 400 || d.Sign() != 1 {
		t.Fatalf("1e-400: scale %d sign %d", d.Scale(), d.Sign())
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

// grammar is isJSONNumber's specification, as a regular expression: the
// loop must agree with it on every input.
var grammar = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]{1,3})?$`)

func TestIsJSONNumberMatchesTheGrammar(t *testing.T) {
	cases := []string{"", "-", "0", "-0", "00", "01", "1", "12", "1.", ".5", "1.5", "-1.50", "1e", "1e+", "1e-", "1e5",
		"1E+12", "1e-123", "1e1234", "0.0e0", "1.e3", "1.5e", "+1", " 1", "1 ", "1e+-3", "0x10", "١", "1_000", "9999999999999999.99",
		"-0.000", "1.2.3", "1e3e3", "e3", "-e3", "NaN", "Infinity"}
	for _, s := range cases {
		if got, want := isJSONNumber(s), grammar.MatchString(s); got != want {
			t.Errorf("isJSONNumber(%q) = %v, the grammar says %v", s, got, want)
		}
	}
	// Every string over the grammar's alphabet up to five characters long.
	alphabet := []byte("-+.eE019")
	var walk func(prefix []byte)
	checked := 0
	walk = func(prefix []byte) {
		s := string(prefix)
		checked++
		if got, want := isJSONNumber(s), grammar.MatchString(s); got != want {
			t.Fatalf("isJSONNumber(%q) = %v, the grammar says %v", s, got, want)
		}
		if len(prefix) == 5 {
			return
		}
		for _, c := range alphabet {
			walk(append(prefix, c))
		}
	}
	walk(nil)
	if checked < 37000 {
		t.Fatalf("checked only %d strings", checked)
	}
}

func FuzzIsJSONNumber(f *testing.F) {
	for _, s := range []string{"0", "-12.50", "1e999", "1e1000", "01", "1.", "2.5E+3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isJSONNumber(s), grammar.MatchString(s); got != want {
			t.Fatalf("isJSONNumber(%q) = %v, the grammar says %v", s, got, want)
		}
	})
}
