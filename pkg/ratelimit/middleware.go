package ratelimit

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/finsvc/finsvc/pkg/apperr"
	"github.com/finsvc/finsvc/pkg/config"
	"github.com/finsvc/finsvc/pkg/tenant"
)

// KeyPrefix namespaces the service's budgets in a shared Redis.
const KeyPrefix = "finsvc:rl:"

// redisTimeout bounds one limiter round trip: past it the request is decided
// locally instead of waiting on a slow Redis.
const redisTimeout = 250 * time.Millisecond

// Limiter is the per-tenant rate limit of the API and the token endpoints.
// Each tenant has two budgets of the configured rate: one for /api/1.0 and
// one for /api/oauth/{token,revoke}, so that heavy API traffic cannot lock a
// tenant's integrations out of refreshing their tokens (and a flood of token
// requests cannot starve the API).
//
// When the shared store (Redis) fails, requests are decided by an in-process
// store of the same rate instead, with a warning logged at most every
// warnEvery: the service keeps answering and each replica still enforces the
// budget on its own (so the effective limit is at most replicas × rate
// until Redis is back). Failing closed would turn a Redis outage into an
// API outage; failing fully open would drop the protection exactly when the
// system is degraded.
type Limiter struct {
	store    Store   // nil: limiting disabled
	fallback *Memory // used when store errs; nil when store is itself in memory
	log      *slog.Logger
	close    func() error

	lastWarn  atomic.Int64 // unix nanos of the last fallback warning
	downUntil atomic.Int64 // unix nanos: skip the store until then
}

// retryStoreAfter is how long a failed store is bypassed, so that an outage
// costs one slow round trip per second rather than one per request.
const retryStoreAfter = time.Second

const warnEvery = 30 * time.Second

// New builds the limiter cfg asks for: disabled when cfg.RateLimitRPS is 0,
// in Redis when cfg.RedisURL is set, else in process. Close releases the
// Redis connection.
func New(cfg *config.Config, log *slog.Logger, opts ...Option) (*Limiter, error) {
	o := options{prefix: KeyPrefix}
	for _, fn := range opts {
		fn(&o)
	}
	if log == nil {
		log = slog.Default()
	}
	if cfg.RateLimitRPS <= 0 {
		return &Limiter{log: log}, nil
	}
	rate := Rate{RPS: cfg.RateLimitRPS, Burst: cfg.RateLimitBurst}
	if cfg.RedisURL == "" {
		return NewWithStore(NewMemory(rate), nil, log), nil
	}
	client, err := OpenRedis(cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	l := NewWithStore(NewRedis(client, rate, o.prefix), NewMemory(rate), log)
	l.close = client.Close
	return l, nil
}

// Option adjusts New.
type Option func(*options)

type options struct{ prefix string }

// WithKeyPrefix replaces KeyPrefix (tests sharing one Redis, or several
// deployments sharing one).
func WithKeyPrefix(p string) Option { return func(o *options) { o.prefix = p } }

// OpenRedis connects to url with timeouts suited to a per-request check
// (short, and at most one retry).
func OpenRedis(url string) (*redis.Client, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("ratelimit: redis url: %w", err)
	}
	opts.DialTimeout = time.Second
	opts.ReadTimeout = 200 * time.Millisecond
	opts.WriteTimeout = 200 * time.Millisecond
	opts.PoolTimeout = 200 * time.Millisecond
	opts.MaxRetries = 1
	return redis.NewClient(opts), nil
}

// NewWithStore builds a limiter over store; fallback (may be nil) decides
// while store fails.
func NewWithStore(store, fallback Store, log *slog.Logger) *Limiter {
	if log == nil {
		log = slog.Default()
	}
	l := &Limiter{store: store, log: log}
	if m, ok := fallback.(*Memory); ok {
		l.fallback = m
	}
	return l
}

// Enabled reports whether requests are limited at all.
func (l *Limiter) Enabled() bool { return l != nil && l.store != nil }

// Close releases the limiter's Redis connection, if any.
func (l *Limiter) Close() error {
	if l == nil || l.close == nil {
		return nil
	}
	return l.close()
}

// budget names the budget a request draws on; "" means not limited.
func budget(path string) string {
	switch {
	case strings.HasPrefix(path, "/api/1.0/"):
		return "api"
	case path == "/api/oauth/token", path == "/api/oauth/revoke":
		return "oauth"
	}
	return ""
}

// Allow decides one request of tenant tenantID against budget.
func (l *Limiter) Allow(ctx context.Context, tenantID int64, budget string) Decision {
	key := strconv.FormatInt(tenantID, 10) + ":" + budget
	if m, ok := l.store.(*Memory); ok {
		d, _ := m.Allow(ctx, key) // in process: no timeout needed, never fails
		return d
	}
	if l.fallback == nil || time.Now().UnixNano() >= l.downUntil.Load() {
		ctx, cancel := context.WithTimeout(ctx, redisTimeout)
		d, err := l.store.Allow(ctx, key)
		cancel()
		if err == nil {
			return d
		}
		now := time.Now().UnixNano()
		l.downUntil.Store(now + int64(retryStoreAfter))
		if now-l.lastWarn.Load() >= int64(warnEvery) {
			l.lastWarn.Store(now)
			l.log.Warn("rate limit store failed; deciding in process until it recovers", "error", err)
		}
	}
	if l.fallback == nil {
		return Decision{Allowed: true} // Limit 0: no headers, nothing known
	}
	d, _ := l.fallback.Allow(ctx, key) // in memory: never fails
	return d
}

// Middleware limits /api/1.0/* and the token and revocation endpoints per
// tenant. It must run after tenant resolution (httpapi.Deps.Middleware);
// requests without a tenant (operational endpoints) pass untouched. Every
// limited response carries RateLimit-Limit, RateLimit-Remaining and
// RateLimit-Reset; a refused one is a 429 in the error format with
// Retry-After.
func (l *Limiter) Middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if !l.Enabled() {
			return next
		}
		return func(c echo.Context) error {
			b := budget(c.Request().URL.Path)
			if b == "" {
				return next(c)
			}
			t, ok := tenant.FromContext(c.Request().Context())
			if !ok {
				return next(c)
			}
			d := l.Allow(c.Request().Context(), t.ID, b)
			if d.Limit == 0 {
				return next(c)
			}
			h := c.Response().Header()
			h.Set("RateLimit-Limit", strconv.Itoa(d.Limit))
			h.Set("RateLimit-Remaining", strconv.Itoa(d.Remaining))
			h.Set("RateLimit-Reset", strconv.FormatInt(ceilSeconds(d.Reset), 10))
			if !d.Allowed {
				h.Set("Retry-After", strconv.FormatInt(max(1, ceilSeconds(d.RetryAfter)), 10))
				return apperr.E(apperr.TooManyRequests, "Too many requests; retry later.")
			}
			return next(c)
		}
	}
}

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(math.Ceil(d.Seconds()))
}
