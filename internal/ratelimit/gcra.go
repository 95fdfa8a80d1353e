// Package ratelimit limits requests per tenant with GCRA (the generic cell
// rate algorithm, a token bucket expressed as one timestamp per key): in
// process by default, or in Redis so that every replica draws on one budget.
//
// A budget is rps requests per second with bursts of up to burst requests.
// The only state per key is the theoretical arrival time (TAT): the instant
// at which the bucket would be full again. A request at now is allowed when
// max(TAT, now) + interval - burst*interval <= now; it then moves TAT on by
// one interval.
package ratelimit

import (
	"context"
	"math"
	"time"
)

// Decision is the outcome of one request against a budget.
type Decision struct {
	Allowed bool
	// Limit is the burst: requests allowed at once from a full budget.
	Limit int
	// Remaining is how many more requests would be allowed right now.
	Remaining int
	// RetryAfter, when denied, is how long until one request is allowed.
	RetryAfter time.Duration
	// Reset is how long until the budget is full again.
	Reset time.Duration
}

// Store decides requests against per-key budgets.
type Store interface {
	// Allow decides one request and, when it is allowed, spends it.
	Allow(ctx context.Context, key string) (Decision, error)
	// Peek decides one request without spending anything: whether Allow
	// would allow it now.
	Peek(ctx context.Context, key string) (Decision, error)
}

// Rate is a budget: RPS requests per second, bursts of Burst.
type Rate struct {
	RPS   float64
	Burst int
}

// interval is the emission interval in microseconds (at least 1).
func (r Rate) interval() int64 {
	if r.RPS <= 0 {
		return math.MaxInt64 / 4
	}
	return max(1, int64(math.Round(1e6/r.RPS)))
}

func (r Rate) burst() int64 { return int64(max(1, r.Burst)) }

// gcra applies one request at now (µs) to the key whose stored TAT is tat
// (0: none). It returns the decision and the new TAT to store (unchanged
// when denied). The Redis script implements the same arithmetic.
func gcra(r Rate, tat, now int64) (Decision, int64) {
	t, b := r.interval(), r.burst()
	tat = max(tat, now)
	newTAT := tat + t
	allowAt := newTAT - b*t
	d := Decision{Limit: int(b)}
	if now < allowAt {
		d.RetryAfter = micros(allowAt - now)
		d.Reset = micros(tat - now)
		return d, tat
	}
	d.Allowed = true
	d.Remaining = int((now - allowAt) / t)
	d.Reset = micros(newTAT - now)
	return d, newTAT
}

func micros(us int64) time.Duration { return time.Duration(us) * time.Microsecond }
