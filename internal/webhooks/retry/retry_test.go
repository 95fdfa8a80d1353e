package retry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"code.dny.dev/ssrf"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func fixed(r float64) func() float64 { return func() float64 { return r } }

func TestNextSchedule(t *testing.T) {
	want := []time.Duration{
		5 * time.Second, 5 * time.Minute, 30 * time.Minute,
		2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
	}
	for i, base := range want {
		attempt := i + 1
		t.Run(fmt.Sprintf("after attempt %d", attempt), func(t *testing.T) {
			for _, tc := range []struct {
				r      float64
				factor float64
			}{
				{0, 0.8},   // earliest
				{0.5, 1.0}, // centre: exactly the schedule
				{1, 1.2},   // latest (rnd never returns 1, but clamping allows it)
			} {
				got, ok := Next(attempt, t0, fixed(tc.r))
				if !ok {
					t.Fatalf("attempt %d exhausted", attempt)
				}
				wantT := t0.Add(time.Duration(float64(base) * tc.factor))
				if !got.Equal(wantT) {
					t.Errorf("rnd=%v: next = %v, want %v", tc.r, got.Sub(t0), wantT.Sub(t0))
				}
			}
		})
	}
}

func TestExhaustion(t *testing.T) {
	if MaxAttempts != 8 {
		t.Fatalf("MaxAttempts = %d, want 8 (first attempt + 7 retries)", MaxAttempts)
	}
	tests := []struct {
		attempt int
		ok      bool
	}{
		{-3, true}, {0, true}, {1, true}, {7, true}, {8, false}, {9, false}, {1 << 30, false},
	}
	for _, tc := range tests {
		_, ok := Next(tc.attempt, t0, fixed(0.5))
		if ok != tc.ok {
			t.Errorf("Next(%d) ok = %v, want %v", tc.attempt, ok, tc.ok)
		}
		_, ok = NextAfterResponse(tc.attempt, 503, "60", t0, fixed(0.5))
		if ok != tc.ok {
			t.Errorf("NextAfterResponse(%d) ok = %v, want %v", tc.attempt, ok, tc.ok)
		}
	}
	// Below 1 is treated as the first attempt, not dropped.
	if d, _ := Delay(0, fixed(0.5)); d != 5*time.Second {
		t.Errorf("Delay(0) = %v, want 5s", d)
	}

	// A full run: count attempts until the schedule says stop.
	attempts, now := 1, t0
	for {
		next, ok := Next(attempts, now, fixed(0.5))
		if !ok {
			break
		}
		attempts++
		now = next
	}
	if attempts != 8 {
		t.Errorf("made %d attempts, want 8", attempts)
	}
	if span := now.Sub(t0); span != 5*time.Second+5*time.Minute+30*time.Minute+27*time.Hour {
		t.Errorf("span = %v", span)
	}
}

// TestJitterBounds samples many rnd values (a deterministic sweep plus
// out-of-range values) and checks every delay stays within ±20%.
func TestJitterBounds(t *testing.T) {
	rs := []float64{-1, -0.0001, 2, 1.0000001}
	for i := 0; i < 1000; i++ {
		rs = append(rs, float64(i)/1000)
	}
	for attempt := 1; attempt < MaxAttempts; attempt++ {
		base := schedule[attempt-1]
		lo, hi := time.Duration(float64(base)*0.8), time.Duration(float64(base)*1.2)
		for _, r := range rs {
			d, ok := Delay(attempt, fixed(r))
			if !ok || d < lo || d > hi {
				t.Fatalf("Delay(%d, rnd=%v) = %v, %v; want within [%v, %v]", attempt, r, d, ok, lo, hi)
			}
		}
	}
	// The default source also stays in bounds and actually varies.
	seen := map[time.Duration]bool{}
	for i := 0; i < 200; i++ {
		d, _ := Delay(3, nil)
		if d < 24*time.Minute || d > 36*time.Minute {
			t.Fatalf("Delay(3, nil) = %v out of bounds", d)
		}
		seen[d] = true
	}
	if len(seen) < 10 {
		t.Fatalf("default jitter produced only %d distinct delays", len(seen))
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2015, 10, 21, 7, 28, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header string
		want   time.Duration
		ok     bool
	}{
		{"empty", "", 0, false},
		{"blank", "   ", 0, false},
		{"seconds", "120", 2 * time.Minute, true},
		{"zero", "0", 0, true},
		{"padded", " 30 ", 30 * time.Second, true},
		{"leading zeros", "007", 7 * time.Second, true},
		{"cap exact", "86400", MaxRetryAfter, true},
		{"over cap", "86401", MaxRetryAfter, true},
		{"overflow", "999999999999999999999999", MaxRetryAfter, true},
		{"negative", "-5", 0, false},
		{"plus sign", "+5", 0, false},
		{"fraction", "1.5", 0, false},
		{"unit", "10s", 0, false},
		{"garbage", "soon", 0, false},
		{"IMF-fixdate future", "Wed, 21 Oct 2015 07:30:00 GMT", 2 * time.Minute, true},
		{"IMF-fixdate now", "Wed, 21 Oct 2015 07:28:00 GMT", 0, true},
		{"IMF-fixdate past", "Wed, 21 Oct 2015 07:00:00 GMT", 0, true},
		{"IMF-fixdate far future", "Fri, 01 Jan 2100 00:00:00 GMT", MaxRetryAfter, true},
		{"RFC 850", "Wednesday, 21-Oct-15 08:28:00 GMT", time.Hour, true},
		{"asctime", "Wed Oct 21 07:29:00 2015", time.Minute, true},
		{"ISO 8601 is not HTTP-date", "2015-10-21T07:30:00Z", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseRetryAfter(tc.header, now)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tc.header, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestNextAfterResponse(t *testing.T) {
	mid := fixed(0.5) // no jitter, so expectations are exact
	tests := []struct {
		name       string
		attempt    int
		status     int
		retryAfter string
		want       time.Duration
	}{
		{"429 longer than schedule wins", 1, 429, "120", 2 * time.Minute},
		{"503 longer than schedule wins", 2, 503, "3600", time.Hour},
		{"503 HTTP-date", 1, 503, t0.Add(10 * time.Minute).Format(http.TimeFormat), 10 * time.Minute},
		{"shorter than schedule: schedule wins", 3, 429, "10", 30 * time.Minute},
		{"zero cannot speed us up", 2, 503, "0", 5 * time.Minute},
		{"capped at 24h", 1, 429, "999999", MaxRetryAfter},
		{"unparseable ignored", 1, 503, "later", 5 * time.Second},
		{"absent", 1, 429, "", 5 * time.Second},
		{"ignored on 500", 1, 500, "3600", 5 * time.Second},
		{"ignored on 502", 1, 502, "3600", 5 * time.Second},
		{"ignored on 301", 1, 301, "3600", 5 * time.Second},
		{"ignored on transport error (status 0)", 1, 0, "3600", 5 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := NextAfterResponse(tc.attempt, tc.status, tc.retryAfter, t0, mid)
			if !ok {
				t.Fatal("exhausted")
			}
			if d := got.Sub(t0); d != tc.want {
				t.Fatalf("delay = %v, want %v", d, tc.want)
			}
		})
	}
	// Retry-After never resurrects an exhausted delivery.
	if _, ok := NextAfterResponse(MaxAttempts, 503, "1", t0, mid); ok {
		t.Fatal("retry after the last attempt")
	}
}

// blockedErr builds the error chain http.Client.Do returns when the guard
// refuses a dial, without dialing anything.
func blockedErr() error {
	guard := ssrf.New()
	inner := guard.Safe("tcp4", "10.0.0.1:443", nil)
	return &url.Error{Op: "Post", URL: "https://internal.example/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: inner}}
}

func TestClassify(t *testing.T) {
	timeoutErr := &url.Error{Op: "Post", URL: "https://x/", Err: context.DeadlineExceeded}
	refused := &url.Error{Op: "Post", URL: "https://x/", Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}
	dnsErr := &url.Error{Op: "Post", URL: "https://x/", Err: &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}}
	tests := []struct {
		status int
		err    error
		want   Outcome
	}{
		{200, nil, Success},
		{201, nil, Success},
		{202, nil, Success},
		{204, nil, Success},
		{299, nil, Success},
		{301, nil, Retry},
		{302, nil, Retry},
		{304, nil, Retry},
		{307, nil, Retry},
		{308, nil, Retry},
		{400, nil, Retry},
		{401, nil, Retry},
		{403, nil, Retry},
		{404, nil, Retry},
		{409, nil, Retry},
		{410, nil, Disable},
		{413, nil, Retry},
		{422, nil, Retry},
		{429, nil, Retry},
		{500, nil, Retry},
		{502, nil, Retry},
		{503, nil, Retry},
		{504, nil, Retry},
		{100, nil, Retry},
		{0, nil, Retry},
		{0, timeoutErr, Retry},
		{0, refused, Retry},
		{0, dnsErr, Retry},
		{0, os.ErrDeadlineExceeded, Retry},
		{0, context.Canceled, Retry},
		{0, blockedErr(), Blocked},
		{200, refused, Retry},        // err wins over status
		{200, blockedErr(), Blocked}, // err wins over status
	}
	for _, tc := range tests {
		name := fmt.Sprintf("%d/%v", tc.status, tc.err)
		if got := Classify(tc.status, tc.err); got != tc.want {
			t.Errorf("Classify(%s) = %v, want %v", name, got, tc.want)
		}
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[Outcome]string{
		Success: "success", Retry: "retry", Disable: "disable", Blocked: "blocked", 0: "outcome(0)",
	} {
		if got := o.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(o), got, want)
		}
	}
	if !strings.Contains(blockedErr().Error(), "prohibited IP") {
		t.Fatalf("blockedErr fixture does not look like a guard refusal: %v", blockedErr())
	}
}
