package oauth

import (
	"strconv"
	"strings"
	"sync"
	"time"
)

// Login throttling defaults: after LoginMaxFailures failed sign-ins for one
// email of a tenant within LoginWindow, or LoginMaxFailuresPerIP from one
// client address, further attempts are refused (429) without checking the
// password until the window that began with the first failure has passed.
const (
	LoginMaxFailures      = 5
	LoginMaxFailuresPerIP = 20
	LoginWindow           = 15 * time.Minute
	// loginMaxEntries bounds the throttle's memory (a few MB at most).
	loginMaxEntries = 100_000
)

// loginThrottle slows password guessing down. It lives in process memory:
// each replica counts on its own (so a guesser spread over n replicas gets
// up to n × the limit) and a restart forgets the counts. That is enough to
// turn online guessing into a trickle; a shared store would add a Redis
// round trip to every sign-in for little more.
//
// A sign-in takes a slot before the password is checked (pending), so that
// a burst of concurrent guesses cannot all pass the check before the first
// failure is counted.
type loginThrottle struct {
	now                   func() time.Time
	window                time.Duration
	maxPerEmail, maxPerIP int
	maxEntries            int
	mu                    sync.Mutex
	counters              map[string]*loginCounter
}

type loginCounter struct {
	start   time.Time // first failure of the current window
	failed  int
	pending int
}

func newLoginThrottle(now func() time.Time) *loginThrottle {
	return &loginThrottle{now: now, window: LoginWindow, maxPerEmail: LoginMaxFailures, maxPerIP: LoginMaxFailuresPerIP,
		maxEntries: loginMaxEntries, counters: map[string]*loginCounter{}}
}

func emailKey(tenantID int64, email string) string {
	return "e:" + strconv.FormatInt(tenantID, 10) + ":" + strings.ToLower(strings.TrimSpace(email))
}

func ipKey(ip string) string { return "ip:" + ip }

// counter returns the live counter of key, resetting one whose window has
// passed; nil when there is none and create is false.
func (l *loginThrottle) counter(key string, now time.Time, create bool) *loginCounter {
	c := l.counters[key]
	if c != nil && c.failed > 0 && !now.Before(c.start.Add(l.window)) {
		c.failed = 0
	}
	if c == nil && create {
		if len(l.counters) >= l.maxEntries {
			l.evict(now)
		}
		c = &loginCounter{}
		l.counters[key] = c
	}
	return c
}

// evict drops counters whose window has passed; if the map is still full
// (a flood of distinct emails), arbitrary idle ones go: the per-IP counter
// still holds such a flood back.
func (l *loginThrottle) evict(now time.Time) {
	for k, c := range l.counters {
		if c.pending == 0 && (c.failed == 0 || !now.Before(c.start.Add(l.window))) {
			delete(l.counters, k)
		}
	}
	for k, c := range l.counters {
		if len(l.counters) < l.maxEntries {
			break
		}
		if c.pending == 0 {
			delete(l.counters, k)
		}
	}
}

// blocked reports whether c has no slot left, and until when.
func (l *loginThrottle) blocked(c *loginCounter, max int, now time.Time) (time.Duration, bool) {
	if c == nil || c.failed+c.pending < max {
		return 0, false
	}
	if c.failed == 0 {
		return time.Second, true // only pending attempts: retry shortly
	}
	return c.start.Add(l.window).Sub(now), true
}

// begin takes a sign-in slot for email at tenantID from ip. When the email
// or the address is over its limit it returns ok=false and how long to
// wait; otherwise done must be called with the outcome: a wrong password
// (failed), a sign-in (succeeded), or neither (the check itself erred).
func (l *loginThrottle) begin(tenantID int64, email, ip string) (done func(failed, succeeded bool), retryAfter time.Duration, ok bool) {
	ek, ik := emailKey(tenantID, email), ipKey(ip)
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if d, b := l.blocked(l.counter(ek, now, false), l.maxPerEmail, now); b {
		return nil, d, false
	}
	if d, b := l.blocked(l.counter(ik, now, false), l.maxPerIP, now); b {
		return nil, d, false
	}
	e, i := l.counter(ek, now, true), l.counter(ik, now, true)
	e.pending++
	i.pending++
	var once sync.Once
	return func(failed, succeeded bool) { once.Do(func() { l.end(ek, ik, e, i, failed, succeeded) }) }, 0, true
}

func (l *loginThrottle) end(ek, ik string, e, i *loginCounter, failed, succeeded bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	e.pending--
	i.pending--
	if failed {
		for _, c := range []*loginCounter{e, i} {
			if c.failed > 0 && !now.Before(c.start.Add(l.window)) {
				c.failed = 0
			}
			if c.failed == 0 {
				c.start = now
			}
			c.failed++
		}
	} else if succeeded {
		// A correct password clears the email's count, not the address's:
		// one known account must not reset a guesser's budget for others.
		e.failed = 0
	}
	for k, c := range map[string]*loginCounter{ek: e, ik: i} {
		if c.failed == 0 && c.pending == 0 && l.counters[k] == c {
			delete(l.counters, k)
		}
	}
}
