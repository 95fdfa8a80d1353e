package jsonenc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/jsonenc"
)

var strs = []string{"", "Acme AB", `quote " back \ slash`, "\b\f\n\r\t\x00\x01\x1f\x7f", "<script>&amp;</script>",
	"åäö 日本語 🙂", "\u2028\u2029", "bad \xff\xfe utf8", "\xc3", "\xed\xa0\x80", strings.Repeat("ab", 500)}

// TestString: encoding/json's bytes for fixed and random strings.
func TestString(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const alphabet = "aZ09 \"\\<>&\x00\x1f\x7f\b\f\n\r\t\xe2\x80\xa8\xa9\xc3\xa5\xff"
	cases := append([]string(nil), strs...)
	for range 20000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		want, _ := json.Marshal(s)
		if got := jsonenc.String(nil, s); string(got) != string(want) {
			t.Fatalf("String(%q) = %s, encoding/json writes %s", s, got, want)
		}
		if got, want := jsonenc.Minimal(nil, s), slogString(t, s); string(got) != want {
			t.Fatalf("Minimal(%q) = %s, slog writes %s", s, got, want)
		}
	}
}

// slogString is s as log/slog's JSON handler writes a message.
func slogString(t *testing.T, s string) string {
	var b bytes.Buffer
	if err := slog.NewJSONHandler(&b, nil).Handle(context.Background(), slog.NewRecord(time.Time{}, slog.LevelInfo, s, 0)); err != nil {
		t.Fatal(err)
	}
	const prefix = `{"level":"INFO","msg":`
	line := b.String()
	if !strings.HasPrefix(line, prefix) || !strings.HasSuffix(line, "}\n") {
		t.Fatalf("slog wrote %q", line)
	}
	return line[len(prefix) : len(line)-2]
}

// TestTime: MarshalJSON's bytes, and false exactly where it fails.
func TestTime(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	cases := []time.Time{{}, time.Now(), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600)), time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", -24*3600+60)),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 23*3600+59*60+30))}
	for range 5000 {
		cases = append(cases, time.Unix(rng.Int64N(4e11)-2e11, rng.Int64N(1e9)).In(time.FixedZone("z", rng.IntN(200000)-100000)))
	}
	for _, tm := range cases {
		want, err := json.Marshal(tm)
		got, ok := jsonenc.Time([]byte("x"), tm)
		if ok != (err == nil) || ok && string(got) != "x"+string(want) || !ok && string(got) != "x" {
			t.Fatalf("Time(%v) = %s, %v; encoding/json: %s, %v", tm, got, ok, want, err)
		}
	}
}

func FuzzString(f *testing.F) {
	for _, s := range strs {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := jsonenc.String(nil, s); string(got) != string(want) {
			t.Fatalf("String(%q) = %s, encoding/json writes %s", s, got, want)
		}
	})
}
