package ratelimit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/testdb"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newMemory(rate Rate) (*Memory, *fakeClock) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	m := NewMemory(rate)
	m.now = clk.Now
	return m, clk
}

func TestMemoryBurstThenRefill(t *testing.T) {
	m, clk := newMemory(Rate{RPS: 10, Burst: 5}) // one request per 100ms
	ctx := context.Background()
	for i := range 5 {
		d, _ := m.Allow(ctx, "k")
		if !d.Allowed || d.Limit != 5 || d.Remaining != 4-i {
			t.Fatalf("request %d: %+v, want allowed with remaining %d", i, d, 4-i)
		}
	}
	d, _ := m.Allow(ctx, "k")
	if d.Allowed || d.Remaining != 0 {
		t.Fatalf("6th request in the same instant: %+v, want denied", d)
	}
	if d.RetryAfter != 100*time.Millisecond {
		t.Fatalf("RetryAfter = %s, want one interval (100ms)", d.RetryAfter)
	}
	if d.Reset != 500*time.Millisecond {
		t.Fatalf("Reset = %s, want 5 intervals", d.Reset)
	}
	// A denied request does not consume budget: after one interval exactly
	// one more is allowed.
	clk.Advance(99 * time.Millisecond)
	if d, _ := m.Allow(ctx, "k"); d.Allowed {
		t.Fatalf("allowed before the interval passed: %+v", d)
	}
	clk.Advance(time.Millisecond)
	if d, _ := m.Allow(ctx, "k"); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("after one interval: %+v, want one allowed", d)
	}
	if d, _ := m.Allow(ctx, "k"); d.Allowed {
		t.Fatalf("second request after one interval allowed: %+v", d)
	}
	// Idle long enough, the budget is full again (and no more than full).
	clk.Advance(10 * time.Second)
	if d, _ := m.Allow(ctx, "k"); !d.Allowed || d.Remaining != 4 {
		t.Fatalf("after idling: %+v, want a full burst", d)
	}
}

func TestMemoryKeysAreIndependent(t *testing.T) {
	m, _ := newMemory(Rate{RPS: 1, Burst: 2})
	ctx := context.Background()
	for range 2 {
		m.Allow(ctx, "a")
	}
	if d, _ := m.Allow(ctx, "a"); d.Allowed {
		t.Fatal("a: third request allowed")
	}
	if d, _ := m.Allow(ctx, "b"); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("b drew on a's budget: %+v", d)
	}
}

func TestMemorySweepsFullBudgets(t *testing.T) {
	m, clk := newMemory(Rate{RPS: 100, Burst: 1})
	ctx := context.Background()
	for i := range sweepEvery - 1 {
		m.Allow(ctx, "k"+string(rune('a'+i%26))+hex.EncodeToString([]byte{byte(i), byte(i >> 8)}))
	}
	if n := m.keys(); n != sweepEvery-1 {
		t.Fatalf("keys = %d before the sweep", n)
	}
	clk.Advance(time.Second) // every budget is full again
	m.Allow(ctx, "last")     // triggers the sweep
	if n := m.keys(); n > 1 {
		t.Fatalf("keys = %d after the sweep, want only the live one", n)
	}
}

// Concurrent requests at one instant: exactly burst are allowed, whatever
// the interleaving (run with -race).
func TestMemoryConcurrentExactBudget(t *testing.T) {
	m, _ := newMemory(Rate{RPS: 1, Burst: 25})
	if n := hammer(t, m, "k", 8, 40); n != 25 {
		t.Fatalf("allowed %d of 320 concurrent requests, want exactly the burst 25", n)
	}
}

// hammer sends workers×each requests concurrently and counts the allowed.
func hammer(t *testing.T, s Store, key string, workers, each int) int64 {
	t.Helper()
	var allowed atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range each {
				d, err := s.Allow(context.Background(), key)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					allowed.Add(1)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	return allowed.Load()
}

func uniquePrefix(t *testing.T) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "finsvc:test:" + strings.ReplaceAll(t.Name(), "/", "_") + ":" + hex.EncodeToString(b[:]) + ":"
}

func redisClient(t *testing.T) *redis.Client {
	t.Helper()
	c, err := OpenRedis(testdb.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("redis ping: %v", err)
	}
	return c
}

func TestRedisBurstThenDeny(t *testing.T) {
	c := redisClient(t)
	prefix := uniquePrefix(t)
	// 0.5 rps: an interval of 2s, far longer than the test's requests take,
	// so the refill cannot blur the counts.
	r := NewRedis(c, Rate{RPS: 0.5, Burst: 3}, prefix)
	ctx := context.Background()
	for i := range 3 {
		d, err := r.Allow(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if !d.Allowed || d.Limit != 3 || d.Remaining != 2-i {
			t.Fatalf("request %d: %+v", i, d)
		}
	}
	d, err := r.Allow(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed {
		t.Fatalf("4th request allowed: %+v", d)
	}
	if d.RetryAfter <= time.Second || d.RetryAfter > 2*time.Second {
		t.Fatalf("RetryAfter = %s, want just under one 2s interval", d.RetryAfter)
	}
	if d.Reset <= 5*time.Second || d.Reset > 6*time.Second {
		t.Fatalf("Reset = %s, want just under 3 intervals", d.Reset)
	}
	// The key expires once the budget is full again, so Redis holds no
	// state for idle tenants.
	ttl, err := c.PTTL(ctx, prefix+"k").Result()
	if err != nil || ttl <= 5*time.Second || ttl > 6100*time.Millisecond {
		t.Fatalf("key TTL = %s, %v; want about the time to a full budget", ttl, err)
	}
	if d, _ := r.Allow(ctx, "other"); !d.Allowed {
		t.Fatal("another key drew on k's budget")
	}
}

func TestRedisRefills(t *testing.T) {
	c := redisClient(t)
	r := NewRedis(c, Rate{RPS: 20, Burst: 1}, uniquePrefix(t)) // 50ms interval
	ctx := context.Background()
	if d, _ := r.Allow(ctx, "k"); !d.Allowed {
		t.Fatal("first request denied")
	}
	d, _ := r.Allow(ctx, "k")
	if d.Allowed {
		// Only possible if 50ms passed between two local round trips.
		t.Skip("redis round trip slower than the interval; cannot observe a denial")
	}
	time.Sleep(d.RetryAfter + 5*time.Millisecond)
	if d, _ := r.Allow(ctx, "k"); !d.Allowed {
		t.Fatalf("denied after RetryAfter: %+v", d)
	}
}

// Two limiters (two replicas, two connections) on one Redis share one
// budget: together they allow exactly the burst, under concurrency.
func TestRedisTwoInstancesShareOneBudget(t *testing.T) {
	prefix := uniquePrefix(t)
	rate := Rate{RPS: 0.1, Burst: 30} // 10s interval: no refill during the test
	a := NewRedis(redisClient(t), rate, prefix)
	b := NewRedis(redisClient(t), rate, prefix)
	var total atomic.Int64
	var wg sync.WaitGroup
	for _, s := range []Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			total.Add(hammer(t, s, "tenant-1:api", 4, 25))
		}()
	}
	wg.Wait()
	if n := total.Load(); n != 30 {
		t.Fatalf("two instances allowed %d of 200 requests together, want exactly the shared burst 30", n)
	}
	// And both see the budget as spent.
	for i, s := range []Store{a, b} {
		if d, _ := s.Allow(context.Background(), "tenant-1:api"); d.Allowed {
			t.Fatalf("instance %d still allows after the shared budget is spent", i)
		}
	}
}

// A Redis that cannot be reached does not fail requests: the limiter decides
// in process, with one warning rather than one per request.
func TestRedisDownFallsBackToMemory(t *testing.T) {
	c, err := OpenRedis("redis://127.0.0.1:1/0") // nothing listens on port 1
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var logs bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	rate := Rate{RPS: 0.1, Burst: 2}
	l := NewWithStore(NewRedis(c, rate, uniquePrefix(t)), NewMemory(rate), log)
	var allowed int
	for range 5 {
		if l.Allow(context.Background(), 7, "api").Allowed {
			allowed++
		}
	}
	if allowed != 2 {
		t.Fatalf("allowed %d of 5 with Redis down, want the in-process burst 2", allowed)
	}
	if l.Fallbacks() != 5 {
		t.Fatalf("Fallbacks = %d, want 5 (every decision was taken in process)", l.Fallbacks())
	}
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(logs.String(), "rate limit store failed"); n != 1 {
		t.Fatalf("logged %d warnings, want 1:\n%s", n, logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// Memory and Redis implement the same arithmetic: the same sequence of
// requests gets the same decisions from both.
func TestMemoryAndRedisAgree(t *testing.T) {
	rate := Rate{RPS: 0.2, Burst: 4}
	mem, _ := newMemory(rate)
	red := NewRedis(redisClient(t), rate, uniquePrefix(t))
	for i := range 7 {
		dm, _ := mem.Allow(context.Background(), "k")
		dr, err := red.Allow(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		if dm.Allowed != dr.Allowed || dm.Remaining != dr.Remaining || dm.Limit != dr.Limit {
			t.Fatalf("request %d: memory %+v, redis %+v", i, dm, dr)
		}
	}
}

// Address budgets: a peek spends nothing, a charge does; refusals and
// in-process fallbacks reach the observer (the metrics), here with Redis
// down so that every decision falls back.
func TestAddressBudgetPeekChargeAndObserver(t *testing.T) {
	cfg := config.Default()
	cfg.RateLimitRPS = 0 // tenant budgets off: only the address budget
	cfg.RateLimitAddressRPS, cfg.RateLimitAddressBurst = 0.001, 2
	cfg.RedisURL = "redis://127.0.0.1:1/0" // nothing listens on port 1
	var refused []string
	var fallbacks atomic.Int64
	l, err := New(cfg, slog.New(slog.DiscardHandler), WithKeyPrefix(uniquePrefix(t)),
		WithObserver(func(b string) { refused = append(refused, b) }, func() { fallbacks.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	e := echo.New()
	call := func(fn func(echo.Context, string) error) (*httptest.ResponseRecorder, error) {
		req := httptest.NewRequest("GET", "/api/1.0/me", nil)
		req.RemoteAddr = "192.0.2.1:1234"
		rec := httptest.NewRecorder()
		return rec, fn(e.NewContext(req, rec), BudgetAuth)
	}
	for range 5 {
		if _, err := call(l.GuardAddress); err != nil {
			t.Fatalf("peek refused a fresh address: %v", err)
		}
	}
	for i := range 2 {
		if _, err := call(l.ChargeAddress); err != nil {
			t.Fatalf("charge %d refused within the burst: %v", i, err)
		}
	}
	rec, err := call(l.GuardAddress)
	if !apperr.Is(err, apperr.TooManyRequests) || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("peek after the burst: %v, Retry-After %q", err, rec.Header().Get("Retry-After"))
	}
	if _, err := call(l.ChargeTenant); err != nil {
		t.Fatalf("tenant budgets are off, yet: %v", err)
	}
	if len(refused) != 1 || refused[0] != BudgetAuth {
		t.Fatalf("observer saw refusals %v, want [auth]", refused)
	}
	if fallbacks.Load() != 8 || l.Fallbacks() != 8 {
		t.Fatalf("fallbacks observed %d (Fallbacks %d), want 8", fallbacks.Load(), l.Fallbacks())
	}
}
