package ratelimit

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/clientaddr"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/tenant"
)

// KeyPrefix namespaces the service's budgets in a shared Redis.
const KeyPrefix = "finsvc:rl:"

// redisTimeout bounds one limiter round trip: past it the request is decided
// locally instead of waiting on a slow Redis.
const redisTimeout = 250 * time.Millisecond

// Budget names.
const (
	// BudgetAPI is a tenant's budget for /api/1.0.
	BudgetAPI = "api"
	// BudgetOAuth is a tenant's budget for /api/oauth/{token,revoke}.
	BudgetOAuth = "oauth"
	// BudgetAuth is a client address's budget of failed authentications
	// (bad or missing bearer tokens, bad client credentials).
	BudgetAuth = "auth"
	// BudgetAuthorize is a client address's budget for /oauth/authorize.
	BudgetAuthorize = "authorize"
)

// Limiter holds the service's request budgets, each a GCRA rate:
//
//   - per tenant, charged only once the caller has authenticated: one budget
//     for /api/1.0 and one for /api/oauth/{token,revoke}, so that heavy API
//     traffic cannot lock a tenant's integrations out of refreshing their
//     tokens (and a flood of token requests cannot starve the API);
//   - per client address (internal/clientaddr), for traffic without an
//     authenticated tenant: failed authentications and the authorization
//     pages. Anyone can send a garbage token to a tenant's host; charging
//     that to the tenant would let them lock the tenant out of its own API.
//
// When the shared store (Redis) fails, requests are decided by an in-process
// store of the same rate instead, with a warning logged at most every
// warnEvery and each such decision counted (Fallbacks): the service keeps
// answering and each replica still enforces the budget on its own (so the
// effective limit is at most replicas × rate until Redis is back). Failing
// closed would turn a Redis outage into an API outage; failing fully open
// would drop the protection exactly when the system is degraded.
type Limiter struct {
	tenant     *bucket // nil: tenant budgets disabled
	address    *bucket // nil: address budgets disabled
	trustProxy bool
	log        *slog.Logger
	close      func() error

	refused  func(budget string) // observer of each 429 (metrics); never nil
	fellBack func()              // observer of each fallback decision; never nil

	lastWarn  atomic.Int64 // unix nanos of the last fallback warning
	downUntil atomic.Int64 // unix nanos: skip the shared store until then
	fallbacks atomic.Int64
}

// bucket is one kind of budget: a store, and the in-process store that
// decides while the shared one fails (nil when store is itself in memory).
type bucket struct {
	store    Store
	fallback *Memory
}

// retryStoreAfter is how long a failed store is bypassed, so that an outage
// costs one slow round trip per second rather than one per request.
const retryStoreAfter = time.Second

const warnEvery = 30 * time.Second

// New builds the limiter cfg asks for: tenant budgets of
// cfg.RateLimitRPS/Burst (off when that rate is 0) and address budgets of
// cfg.RateLimitAddressRPS/Burst (off when that rate is 0), in Redis when
// cfg.RedisURL is set, else in process. Close releases the Redis connection.
func New(cfg *config.Config, log *slog.Logger, opts ...Option) (*Limiter, error) {
	o := options{prefix: KeyPrefix, refused: func(string) {}, fellBack: func() {}}
	for _, fn := range opts {
		fn(&o)
	}
	if log == nil {
		log = slog.Default()
	}
	l := &Limiter{log: log, trustProxy: cfg.TrustProxy, refused: o.refused, fellBack: o.fellBack}
	tenantRate := Rate{RPS: cfg.RateLimitRPS, Burst: cfg.RateLimitBurst}
	addrRate := Rate{RPS: cfg.RateLimitAddressRPS, Burst: cfg.RateLimitAddressBurst}
	if cfg.RedisURL == "" || (tenantRate.RPS <= 0 && addrRate.RPS <= 0) {
		if tenantRate.RPS > 0 {
			l.tenant = &bucket{store: NewMemory(tenantRate)}
		}
		if addrRate.RPS > 0 {
			l.address = &bucket{store: NewMemory(addrRate)}
		}
		return l, nil
	}
	client, err := OpenRedis(cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	if tenantRate.RPS > 0 {
		l.tenant = &bucket{store: NewRedis(client, tenantRate, o.prefix), fallback: NewMemory(tenantRate)}
	}
	if addrRate.RPS > 0 {
		l.address = &bucket{store: NewRedis(client, addrRate, o.prefix+"addr:"), fallback: NewMemory(addrRate)}
	}
	l.close = client.Close
	return l, nil
}

// Option adjusts New.
type Option func(*options)

type options struct {
	prefix   string
	refused  func(budget string)
	fellBack func()
}

// WithObserver reports each request refused with 429 (by budget name) and
// each decision taken in process because the shared store failed: the
// composition root feeds them to the metrics.
func WithObserver(refused func(budget string), fellBack func()) Option {
	return func(o *options) { o.refused, o.fellBack = refused, fellBack }
}

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

// NewWithStore builds a limiter of tenant budgets over store; fallback (may
// be nil) decides while store fails. It has no address budgets.
func NewWithStore(store, fallback Store, log *slog.Logger) *Limiter {
	if log == nil {
		log = slog.Default()
	}
	b := &bucket{store: store}
	if m, ok := fallback.(*Memory); ok {
		b.fallback = m
	}
	return &Limiter{tenant: b, log: log, refused: func(string) {}, fellBack: func() {}}
}

// Enabled reports whether any request is limited at all.
func (l *Limiter) Enabled() bool { return l != nil && (l.tenant != nil || l.address != nil) }

// Close releases the limiter's Redis connection, if any.
func (l *Limiter) Close() error {
	if l == nil || l.close == nil {
		return nil
	}
	return l.close()
}

// Fallbacks counts the decisions taken in process because the shared store
// failed.
func (l *Limiter) Fallbacks() int64 {
	if l == nil {
		return 0
	}
	return l.fallbacks.Load()
}

// Allow decides (and spends) one request of tenant tenantID on budget.
func (l *Limiter) Allow(ctx context.Context, tenantID int64, budget string) Decision {
	if l == nil || l.tenant == nil {
		return Decision{Allowed: true}
	}
	return l.decide(ctx, l.tenant, strconv.FormatInt(tenantID, 10)+":"+budget, false)
}

// AllowAddress decides (and spends) one request of client address addr on
// budget.
func (l *Limiter) AllowAddress(ctx context.Context, addr, budget string) Decision {
	if l == nil || l.address == nil {
		return Decision{Allowed: true}
	}
	return l.decide(ctx, l.address, addr+":"+budget, false)
}

// PeekAddress decides one request of addr on budget without spending it.
func (l *Limiter) PeekAddress(ctx context.Context, addr, budget string) Decision {
	if l == nil || l.address == nil {
		return Decision{Allowed: true}
	}
	return l.decide(ctx, l.address, addr+":"+budget, true)
}

func (l *Limiter) decide(ctx context.Context, b *bucket, key string, peek bool) Decision {
	call := func(ctx context.Context, s Store) (Decision, error) {
		if peek {
			return s.Peek(ctx, key)
		}
		return s.Allow(ctx, key)
	}
	if _, ok := b.store.(*Memory); ok {
		d, _ := call(ctx, b.store) // in process: no timeout needed, never fails
		return d
	}
	if b.fallback == nil || time.Now().UnixNano() >= l.downUntil.Load() {
		ctx, cancel := context.WithTimeout(ctx, redisTimeout)
		d, err := call(ctx, b.store)
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
	if b.fallback == nil {
		return Decision{Allowed: true} // Limit 0: no headers, nothing known
	}
	l.fallbacks.Add(1)
	l.fellBack()
	d, _ := call(ctx, b.fallback) // in memory: never fails
	return d
}

// The HTTP side. Each method writes the RateLimit-* headers of the budget it
// decided on and answers a refusal with a 429 in the error format with
// Retry-After. The caller decides when to charge which budget: the bearer
// check and the token endpoints know whether the caller authenticated.

// ChargeTenant spends one request of the authenticated caller's tenant on
// budget (BudgetAPI or BudgetOAuth). Call it only once authentication
// succeeded.
func (l *Limiter) ChargeTenant(c echo.Context, budget string) error {
	if l == nil || l.tenant == nil {
		return nil
	}
	t, ok := tenant.FromContext(c.Request().Context())
	if !ok {
		return nil
	}
	return l.answer(c, budget, l.Allow(c.Request().Context(), t.ID, budget), true)
}

// GuardAddress refuses a request from a client address that has already
// spent its budget (a flood of bad tokens, say) before any authentication
// work is done for it. It spends nothing: a valid token from that address is
// refused only while the address is over its budget of failures.
func (l *Limiter) GuardAddress(c echo.Context, budget string) error {
	if l == nil || l.address == nil {
		return nil
	}
	addr := clientaddr.From(c.Request(), l.trustProxy)
	return l.answer(c, budget, l.PeekAddress(c.Request().Context(), addr, budget), false)
}

// ChargeAddress spends one request of the client address on budget: a failed
// authentication, or a request that has no authenticated caller at all.
func (l *Limiter) ChargeAddress(c echo.Context, budget string) error {
	if l == nil || l.address == nil {
		return nil
	}
	addr := clientaddr.From(c.Request(), l.trustProxy)
	return l.answer(c, budget, l.AllowAddress(c.Request().Context(), addr, budget), false)
}

// answer writes d's headers and returns the 429 when d refuses. An address
// budget shows its state only on a refusal: on the answers to authenticated
// requests the headers describe the tenant's budget.
func (l *Limiter) answer(c echo.Context, budget string, d Decision, tenantBudget bool) error {
	if d.Limit == 0 {
		return nil
	}
	h := c.Response().Header()
	if tenantBudget || !d.Allowed {
		// Canonical keys set directly, their values in one array: these
		// three are on every authenticated answer.
		v := [3]string{strconv.Itoa(d.Limit), strconv.Itoa(d.Remaining), strconv.FormatInt(ceilSeconds(d.Reset), 10)}
		vs := v[:]
		h["Ratelimit-Limit"], h["Ratelimit-Remaining"], h["Ratelimit-Reset"] = vs[0:1:1], vs[1:2:2], vs[2:3:3]
	}
	if !d.Allowed {
		h.Set("Retry-After", strconv.FormatInt(max(1, ceilSeconds(d.RetryAfter)), 10))
		l.refused(budget)
		return apperr.E(apperr.TooManyRequests, "Too many requests; retry later.")
	}
	return nil
}

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(math.Ceil(d.Seconds()))
}
