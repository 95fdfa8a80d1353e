package jsonlog_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/jsonlog"
)

// both writes r through slog.JSONHandler and through jsonlog and returns the
// two lines.
func both(t testing.TB, opts *slog.HandlerOptions, r slog.Record) (want, got string) {
	var a, b bytes.Buffer
	if err := slog.NewJSONHandler(&a, opts).Handle(context.Background(), r.Clone()); err != nil {
		t.Fatal(err)
	}
	if err := jsonlog.New(&b, opts).Handle(context.Background(), r.Clone()); err != nil {
		t.Fatal(err)
	}
	return a.String(), b.String()
}

var strs = []string{
	"", "request", "GET", "/api/1.0/clients/:id", `quote " and \ backslash`, "tab\tnew\nline\rcr",
	"\x00\x01\x1f\x7f", "<html>&amp;", "åäö ÅÄÖ 日本語 🙂", "\u2028\u2029", "bad \xff\xfe utf8", "\xc3", "a\u2027b",
	strings.Repeat("x", 3000),
}

var floats = []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 1.234, 12.345, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 123456789e15,
	-1e-9, 3.0e-300, math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1 + 0.2, 1.0 / 3, 2.5e-5}

func randAttr(rng *rand.Rand) slog.Attr {
	key := strs[rng.IntN(len(strs))]
	if rng.IntN(4) > 0 {
		key = []string{"request_id", "status", "latency_ms", "tenant", "k"}[rng.IntN(5)]
	}
	switch rng.IntN(11) {
	case 0:
		return slog.String(key, strs[rng.IntN(len(strs))])
	case 1:
		return slog.Int64(key, rng.Int64()-rng.Int64())
	case 2:
		return slog.Uint64(key, rng.Uint64())
	case 3:
		return slog.Float64(key, floats[rng.IntN(len(floats))])
	case 4:
		return slog.Float64(key, float64(rng.IntN(1_000_000))/1000)
	case 5:
		return slog.Bool(key, rng.IntN(2) == 0)
	case 6:
		return slog.Duration(key, time.Duration(rng.Int64N(1e12)))
	case 7:
		return slog.Time(key, time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).In(time.FixedZone("x", rng.IntN(50000)-25000)))
	case 8:
		return slog.Any(key, errors.New(strs[rng.IntN(len(strs))]))
	case 9:
		return slog.Group(key, slog.Int("a", 1), slog.String("b", "c"))
	default:
		return slog.Any(key, map[string]int{"x": rng.IntN(9)})
	}
}

// TestSameBytes: random records, flat and not, give the same line on both
// handlers.
func TestSameBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		tm := time.Time{}
		if rng.IntN(8) > 0 {
			tm = time.Unix(rng.Int64N(4e9), rng.Int64N(1e9))
		}
		r := slog.NewRecord(tm, slog.Level(rng.IntN(16)-8), strs[rng.IntN(len(strs))], 0)
		for range rng.IntN(12) {
			r.AddAttrs(randAttr(rng))
		}
		if want, got := both(t, nil, r); want != got {
			t.Fatalf("record %d:\nslog:    %q\njsonlog: %q", i, want, got)
		}
	}
}

// TestEdges covers what the random records may miss: special floats, years
// outside RFC 3339, empty attributes and groups, and the options that send
// a record to slog itself.
func TestEdges(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 123456789, time.UTC)
	cases := map[string][]slog.Attr{
		"NaN": {slog.Float64("f", math.NaN())},
		"Inf": {slog.Float64("f", math.Inf(-1))},
		"every float": func() (as []slog.Attr) {
			for _, f := range floats {
				as = append(as, slog.Float64("f", f))
			}
			return
		}(),
		"year 10000":   {slog.Time("t", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))},
		"year -1":      {slog.Time("t", time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC))},
		"empty":        {{}},
		"empty key":    {slog.String("", "v")},
		"empty group":  {slog.Group("")},
		"inline group": {slog.Group("", slog.Int("a", 1))},
		"monotonic":    {slog.Time("t", time.Now())},
		"many": func() (as []slog.Attr) {
			for i := range 40 {
				as = append(as, slog.Int("i", i))
			}
			return
		}(),
	}
	for name, attrs := range cases {
		t.Run(name, func(t *testing.T) {
			for _, tm := range []time.Time{now, {}, time.Now(), time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC)} {
				r := slog.NewRecord(tm, slog.LevelInfo, "m", 0)
				r.AddAttrs(attrs...)
				if want, got := both(t, nil, r); want != got {
					t.Fatalf("slog:    %q\njsonlog: %q", want, got)
				}
			}
		})
	}
	r := slog.NewRecord(now, slog.LevelWarn, "m", 0)
	r.AddAttrs(slog.String("secret", "s"), slog.Int("n", 1))
	for name, opts := range map[string]*slog.HandlerOptions{
		"ReplaceAttr": {ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == "secret" {
				return slog.String(a.Key, "redacted")
			}
			return a
		}},
		"AddSource": {AddSource: true},
		"Level":     {Level: slog.LevelDebug},
	} {
		if want, got := both(t, opts, r); want != got || strings.Contains(name, "Replace") && !strings.Contains(got, "redacted") {
			t.Fatalf("%s:\nslog:    %q\njsonlog: %q", name, want, got)
		}
	}
}

func TestEnabledAndDerived(t *testing.T) {
	var b bytes.Buffer
	h := jsonlog.New(&b, &slog.HandlerOptions{Level: slog.LevelWarn})
	if h.Enabled(context.Background(), slog.LevelInfo) || !h.Enabled(context.Background(), slog.LevelError) {
		t.Fatal("Enabled does not follow the level")
	}
	slog.New(h).With("component", "janitor").WithGroup("g").Error("x", "n", 1)
	slog.New(h).Warn("y")
	want := `"level":"ERROR","msg":"x","component":"janitor","g":{"n":1}}` + "\n"
	if lines := strings.Split(b.String(), "\n"); len(lines) != 3 || !strings.HasSuffix(lines[0]+"\n", want) || !strings.HasSuffix(lines[1], `"level":"WARN","msg":"y"}`) {
		t.Fatalf("got %q", b.String())
	}
}

// TestConcurrentLines: lines from many goroutines, through the fast and the
// derived path, arrive whole (run with -race).
func TestConcurrentLines(t *testing.T) {
	var b bytes.Buffer
	h := jsonlog.New(&b, nil)
	l, derived := slog.New(h), slog.New(h).With("d", true)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				l.Info("fast", "g", g, "i", i, "pad", strings.Repeat("p", 100))
				derived.Info("slow", "g", g, "i", i)
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 8*200*2 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, line := range lines {
		if !strings.HasPrefix(line, `{"time":`) || !strings.HasSuffix(line, "}") || strings.Count(line, `"time"`) != 1 {
			t.Fatalf("torn line %q", line)
		}
	}
}

// FuzzSameBytes: any message and string, int and float attribute.
func FuzzSameBytes(f *testing.F) {
	for _, s := range strs {
		f.Add(s, s, int64(-7), 1.5)
	}
	f.Fuzz(func(t *testing.T, msg, s string, n int64, x float64) {
		r := slog.NewRecord(time.Unix(n%4e9, n%1e9), slog.LevelInfo, msg, 0)
		r.AddAttrs(slog.String(s, s), slog.Int64("n", n), slog.Float64("x", x), slog.String("k", msg))
		if want, got := both(t, nil, r); want != got {
			t.Fatalf("slog:    %q\njsonlog: %q", want, got)
		}
	})
}

// BenchmarkAccessLine: the access line's ten attributes on both handlers.
func BenchmarkAccessLine(b *testing.B) {
	for name, h := range map[string]slog.Handler{
		"slog":    slog.NewJSONHandler(discard{}, nil),
		"jsonlog": jsonlog.New(discard{}, nil),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
				r.AddAttrs(slog.String("request_id", "0123456789abcdef01234567"), slog.String("method", "GET"),
					slog.String("route", "/api/1.0/clients/:id"), slog.Int("status", 200), slog.Float64("latency_ms", 1.234),
					slog.Int64("bytes", 245), slog.String("tenant", "acme"), slog.Int64("user_id", 1), slog.String("client_id", "app-123"))
				_ = h.Handle(context.Background(), r)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
