package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	var lat []time.Duration
	for i := 1; i <= 100; i++ {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {1, time.Millisecond}, {0.1, time.Millisecond}} {
		if got := Percentile(lat, c.p); got != c.want {
			t.Errorf("p%v = %s, want %s", c.p, got, c.want)
		}
	}
	if got := Percentile(lat[:3], 50); got != 2*time.Millisecond {
		t.Errorf("p50 of 3 = %s, want the 2nd", got)
	}
	if Percentile(nil, 50) != 0 {
		t.Error("p50 of nothing")
	}
}

// run stops at Max, counts unexpected statuses as errors, and measures every
// request exactly once.
func TestRunBoundedByMax(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1)%10 == 0 {
			w.WriteHeader(500)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	sc := scenario{Name: "x", Want: 200, Max: 100, Next: func(int64) (*http.Request, error) {
		return http.NewRequest("GET", srv.URL, nil)
	}}
	r := run(context.Background(), srv.Client(), sc, 4, 10*time.Second)
	if r.N != 100 || served.Load() != 100 {
		t.Fatalf("N = %d, served %d; want 100", r.N, served.Load())
	}
	if r.Errors != 10 || r.Codes[500] != 10 || r.Codes[200] != 90 {
		t.Fatalf("errors %d, codes %v; want 10 × 500", r.Errors, r.Codes)
	}
	m := merge([]*result{r, r})
	if m.N != 200 || m.Errors != 20 || len(m.Lat) != 200 {
		t.Fatalf("merge: %+v", m)
	}
}

// parseWrk reads the Lua script's done() line, whatever wrk prints around
// it, and counts non-2xx answers and socket errors as errors.
func TestParseWrk(t *testing.T) {
	m, err := parseWrk("Running 8s test @ http://127.0.0.1:1/x\n  2 threads and 64 connections\nWRKRESULT 80000 8000000 1500 7250 3 1\nRequests/sec: 10000\n")
	if err != nil {
		t.Fatal(err)
	}
	if m.Requests != 80000 || m.RPS != 10000 || m.P50 != 1500*time.Microsecond || m.P99 != 7250*time.Microsecond || m.Errors != 4 {
		t.Fatalf("parsed %+v", m)
	}
	if _, err := parseWrk("Requests/sec: 10000\n"); err == nil {
		t.Fatal("output without the script's line parsed")
	}
}
