package oauth

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func fail(t *testing.T, l *loginThrottle, tenantID int64, email, ip string) {
	t.Helper()
	done, _, ok := l.begin(tenantID, email, ip)
	if !ok {
		t.Fatalf("%d/%s from %s refused", tenantID, email, ip)
	}
	done(true, false)
}

// TestThrottlePerIP: failures on many emails from one address use up the
// address's budget; another address is unaffected; a sign-in does not
// reset the address.
func TestThrottlePerIP(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	l := newLoginThrottle(clk.now)
	l.maxPerIP = 3
	for i := range 3 {
		fail(t, l, 1, fmt.Sprintf("u%d@x", i), "203.0.113.7")
		if i == 1 {
			done, _, ok := l.begin(1, "ok@x", "203.0.113.7")
			if !ok {
				t.Fatal("refused before the limit")
			}
			done(false, true)
		}
	}
	if _, wait, ok := l.begin(2, "fresh@x", "203.0.113.7"); ok || wait <= 0 || wait > LoginWindow {
		t.Fatalf("4th failure's address: ok=%v wait=%v", ok, wait)
	}
	fail(t, l, 1, "fresh@x", "198.51.100.1")
	clk.add(LoginWindow)
	fail(t, l, 1, "fresh@x", "203.0.113.7")
}

// TestThrottleConcurrent: a burst of simultaneous attempts for one email
// gets exactly the limit of password checks, not one per request.
func TestThrottleConcurrent(t *testing.T) {
	l := newLoginThrottle(time.Now)
	const n = 50
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		granted []func(bool, bool)
		start   = make(chan struct{})
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if done, _, ok := l.begin(7, "victim@x", fmt.Sprintf("10.0.0.%d", i)); ok {
				mu.Lock()
				granted = append(granted, done)
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(granted) != LoginMaxFailures {
		t.Fatalf("%d attempts checked concurrently, want %d", len(granted), LoginMaxFailures)
	}
	for _, done := range granted {
		done(true, false)
		done(true, false) // idempotent
	}
	if _, _, ok := l.begin(7, "victim@x", "10.0.1.1"); ok {
		t.Fatal("attempt after the limit allowed")
	}
	if c := l.counters[emailKey(7, "victim@x")]; c == nil || c.failed != LoginMaxFailures || c.pending != 0 {
		t.Fatalf("counter %+v", c)
	}
}

// TestThrottleBounded: a flood of distinct emails and addresses never
// grows the map past its bound.
func TestThrottleBounded(t *testing.T) {
	l := newLoginThrottle(time.Now)
	l.maxEntries = 10
	for i := range 200 {
		fail(t, l, 1, fmt.Sprintf("u%d@x", i), fmt.Sprintf("10.0.%d.%d", i/256, i%256))
		if len(l.counters) > l.maxEntries {
			t.Fatalf("%d counters after %d failures", len(l.counters), i+1)
		}
	}
	// Counters with nothing to remember are dropped at once.
	done, _, _ := l.begin(1, "new@x", "10.9.9.9")
	done(false, true)
	if _, ok := l.counters[emailKey(1, "new@x")]; ok {
		t.Fatal("a successful sign-in left a counter")
	}
}
