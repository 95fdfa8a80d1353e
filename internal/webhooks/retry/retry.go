// Package retry decides what happens after a webhook delivery attempt: how
// the attempt is classified and when the next one is due.
//
// It is pure: the current time and the random source are parameters, so the
// outbox can drive it from a controllable clock in tests and the schedule is
// reproducible with a deterministic rnd.
//
// The schedule (ARCHITECTURE.md, Webhooks) retries 5s, 5m, 30m, 2h, 5h, 10h and 10h after
// each failed attempt, so a delivery gets MaxAttempts = 8 attempts over about
// 28 hours, each delay jittered by ±20% so that retries for many receivers
// that failed together (an outage at a popular host) do not arrive together.
package retry

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/finsvc/finsvc/internal/webhooks/httpclient"
)

// schedule[i] is the base delay after failed attempt i+1.
var schedule = [...]time.Duration{
	5 * time.Second,
	5 * time.Minute,
	30 * time.Minute,
	2 * time.Hour,
	5 * time.Hour,
	10 * time.Hour,
	10 * time.Hour,
}

// MaxAttempts is the total number of attempts per delivery: the first one
// plus one per entry of the schedule.
const MaxAttempts = len(schedule) + 1

// Jitter is the fraction by which each scheduled delay is randomly lengthened
// or shortened.
const Jitter = 0.2

// MaxRetryAfter caps a receiver's Retry-After. Without a cap a receiver could
// park a delivery for years (or overflow the arithmetic); 24 h is the default
// secret rotation overlap and longer than any single step of the schedule.
const MaxRetryAfter = 24 * time.Hour

// Delay returns the jittered delay after failed attempt number attempt
// (1-based: pass 1 after the first attempt failed), or false when that was
// the last attempt. Attempt numbers below 1 are treated as 1, so a
// miscounted row is retried soon rather than dropped.
//
// rnd returns a value in [0, 1), like math/rand/v2.Float64; values outside
// are clamped so the ±Jitter bound always holds. A nil rnd uses
// math/rand/v2.Float64.
func Delay(attempt int, rnd func() float64) (time.Duration, bool) {
	if attempt >= MaxAttempts {
		return 0, false
	}
	if attempt < 1 {
		attempt = 1
	}
	if rnd == nil {
		rnd = rand.Float64
	}
	r := min(max(rnd(), 0), 1)
	base := schedule[attempt-1]
	factor := 1 - Jitter + 2*Jitter*r // in [0.8, 1.2]
	return time.Duration(float64(base) * factor), true
}

// Next returns when to make the next attempt after attempt number attempt
// failed at now, or false when attempts are exhausted (see Delay for the
// arguments). Callers with a deadline of their own — act.fetch_data stops at
// its expires_at — give up when the returned time is past it.
func Next(attempt int, now time.Time, rnd func() float64) (time.Time, bool) {
	d, ok := Delay(attempt, rnd)
	if !ok {
		return time.Time{}, false
	}
	return now.Add(d), true
}

// NextAfterResponse is Next for an attempt that got an HTTP response with
// the given status and Retry-After header value (empty if absent).
//
// Retry-After is honoured only on 429 and 503, the statuses it is defined
// for in that role, and only to postpone: the next attempt is at the later of
// the scheduled time and now+Retry-After (capped at MaxRetryAfter). So a
// receiver can slow us down but not make us retry faster than the schedule —
// "Retry-After: 0" on every attempt must not burn all eight attempts in a
// minute — and a Retry-After attempt still counts towards MaxAttempts, so a
// receiver that keeps answering 503 cannot keep a delivery alive forever.
func NextAfterResponse(attempt, status int, retryAfter string, now time.Time, rnd func() float64) (time.Time, bool) {
	next, ok := Next(attempt, now, rnd)
	if !ok {
		return time.Time{}, false
	}
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		if d, ok := ParseRetryAfter(retryAfter, now); ok {
			if at := now.Add(d); at.After(next) {
				next = at
			}
		}
	}
	return next, true
}

// ParseRetryAfter parses a Retry-After header value (RFC 9110 §10.2.3),
// either delta-seconds ("120") or an HTTP-date ("Wed, 21 Oct 2015 07:28:00
// GMT", or the obsolete RFC 850 and asctime forms), relative to now. The
// result is capped at MaxRetryAfter; a date in the past gives 0. It returns
// false for an empty or unparseable value, which callers treat as absent.
func ParseRetryAfter(header string, now time.Time) (time.Duration, bool) {
	header = strings.TrimSpace(header)
	if header == "" {
		return 0, false
	}
	if isDigits(header) {
		secs, err := strconv.ParseInt(header, 10, 64)
		if err != nil || secs > int64(MaxRetryAfter/time.Second) {
			// Only overflow can fail here: all digits, so it is huge.
			return MaxRetryAfter, true
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(header)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now)
	switch {
	case d < 0:
		return 0, true
	case d > MaxRetryAfter:
		return MaxRetryAfter, true
	}
	return d, true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// Outcome is the classification of one delivery attempt, which the
// delivery worker maps to its own delivery.Outcome (the one vocabulary of
// results, logs and metrics labels).
type Outcome int

const (
	// Success: the receiver answered 2xx. The delivery is done.
	Success Outcome = iota + 1
	// Retry: a transient failure — 5xx, 429, 3xx (redirects are not
	// followed), any 4xx but 410, a network error or a timeout. Schedule
	// the next attempt with Next/NextAfterResponse.
	Retry
	// Disable: 410 Gone. The receiver says the endpoint is gone for good;
	// deactivate the registration and stop this delivery.
	Disable
	// Blocked: the SSRF guard refused the target's resolved address. The
	// delivery fails without further retries (repeating it would only be
	// refused again, and retrying is how a rebinding attacker gets more
	// guesses), but the registration stays active: DNS can be fixed, and the
	// owner can redeliver from the delivery log, which records
	// "target address not allowed" (httpclient.Describe).
	Blocked
)

// String returns the outcome's name (for test failures and debugging; the
// worker reports delivery.Outcome instead).
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Retry:
		return "retry"
	case Disable:
		return "disable"
	case Blocked:
		return "blocked"
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// Classify classifies an attempt from the response status and the error
// returned by http.Client.Do (not errors from reading the body: a 2xx
// received within the timeout is a success). A non-nil err takes
// precedence over status.
//
// Classify cannot tell the worker's own cancellation (shutdown) from a
// receiver failure — both come back as Retry. A worker that cancels its
// context should release the delivery without counting the attempt.
func Classify(status int, err error) Outcome {
	if err != nil {
		if httpclient.IsBlocked(err) {
			return Blocked
		}
		return Retry
	}
	switch {
	case status >= 200 && status <= 299:
		return Success
	case status == http.StatusGone:
		return Disable
	default:
		// 3xx, 4xx, 5xx, and anything odd (1xx, 0) are worth another try;
		// a 4xx is often a receiver deploy or misconfiguration that gets
		// fixed within the ~28 h the schedule spans.
		return Retry
	}
}
