// Package metrics exposes the service's Prometheus metrics at GET /metrics,
// on a private registry (nothing a library registers globally leaks in):
//
//   - finsvc_http_request_duration_seconds{method,route,status}: latency by
//     route pattern (never the raw path, so ids do not explode cardinality);
//   - finsvc_token_checks_total{outcome}: bearer token checks (valid,
//     invalid, error);
//   - finsvc_outbox_depth: deliveries pending or in flight, across tenants;
//   - finsvc_webhook_deliveries_total{outcome}: delivery attempts by outcome;
//   - finsvc_rate_limited_total{budget}: requests refused with 429 (budgets:
//     api and oauth per tenant; auth and authorize per client address);
//   - finsvc_rate_limit_fallbacks_total: rate-limit decisions taken in
//     process because the shared store (Redis) failed;
//   - the Go runtime and process collectors.
//
// The counters that other packages feed (DeliveryOutcome, TokenCheck) are
// package-level so that callers need no handle; every Metrics registers them.
package metrics

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/finsvc/finsvc/pkg/apperr"
	"github.com/finsvc/finsvc/pkg/auth"
	"github.com/finsvc/finsvc/pkg/db"
	"github.com/finsvc/finsvc/pkg/httpapi"
	"github.com/finsvc/finsvc/pkg/tracing/suppress"
	"github.com/finsvc/finsvc/pkg/webhooks/outbox"
)

// Delivery outcomes for DeliveryOutcome.
const (
	DeliverySucceeded = "succeeded" // 2xx
	DeliveryRetry     = "retry"     // failed attempt, another is scheduled
	DeliveryFailed    = "failed"    // failed for good (attempts or window exhausted)
	DeliveryDisabled  = "disabled"  // 410: the registration was disabled
	DeliveryCancelled = "cancelled" // dropped before an attempt (registration gone)
)

// Token check outcomes for TokenCheck.
const (
	TokenValid   = "valid"
	TokenInvalid = "invalid" // unknown, expired, revoked, wrong tenant, …
	TokenError   = "error"   // the check itself failed (database, …)
)

var (
	deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "finsvc_webhook_deliveries_total",
		Help: "Webhook delivery attempts by outcome.",
	}, []string{"outcome"})
	tokenChecks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "finsvc_token_checks_total",
		Help: "Bearer token checks by outcome.",
	}, []string{"outcome"})
	rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "finsvc_rate_limited_total",
		Help: "Requests refused by the rate limits, by budget.",
	}, []string{"budget"})
	rateLimitFallbacks = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "finsvc_rate_limit_fallbacks_total",
		Help: "Rate-limit decisions taken in process because the shared store failed.",
	})
)

// tokenCounters are the token check counters by outcome, resolved once:
// a check runs on every API request.
var tokenCounters = map[string]prometheus.Counter{}

func init() {
	// Zero series exist from the start, so rate() works before the first
	// event of a kind.
	for _, o := range []string{DeliverySucceeded, DeliveryRetry, DeliveryFailed, DeliveryDisabled, DeliveryCancelled} {
		deliveries.WithLabelValues(o)
	}
	for _, o := range []string{TokenValid, TokenInvalid, TokenError} {
		tokenCounters[o] = tokenChecks.WithLabelValues(o)
	}
}

// DeliveryOutcome counts one webhook delivery attempt (see the Delivery*
// constants). Safe for concurrent use; call it once per attempt.
func DeliveryOutcome(outcome string) { deliveries.WithLabelValues(outcome).Inc() }

// TokenCheck counts one bearer token check (see the Token* constants).
func TokenCheck(outcome string) {
	if c, ok := tokenCounters[outcome]; ok {
		c.Inc()
		return
	}
	tokenChecks.WithLabelValues(outcome).Inc()
}

// RateLimited counts one request refused by the rate limits.
func RateLimited(budget string) { rateLimited.WithLabelValues(budget).Inc() }

// RateLimitFallback counts one rate-limit decision taken in process.
func RateLimitFallback() { rateLimitFallbacks.Inc() }

// Metrics is one registry with the service's collectors.
type Metrics struct {
	reg      *prometheus.Registry
	duration *prometheus.HistogramVec
	// observers caches duration's series by label values: resolving one
	// (label checks, hashing, a locked map) on every request cost more
	// than the observation. The keys are bounded: routes are patterns,
	// methods one of methods, statuses what the service answers.
	observers sync.Map // series → prometheus.Observer
}

type series struct {
	method, route string
	status        int
}

// methods are the methods a label may name; any other is "other", so that a
// client inventing methods cannot invent series.
var methods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

func (m *Metrics) observer(method, route string, status int) prometheus.Observer {
	if !methods[method] {
		method = "other"
	}
	k := series{method, route, status}
	if o, ok := m.observers.Load(k); ok {
		return o.(prometheus.Observer)
	}
	o := m.duration.WithLabelValues(method, route, strconv.Itoa(status))
	m.observers.Store(k, o)
	return o
}

// New builds the registry. d (may be nil) backs the outbox depth gauge.
func New(d *db.DB) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "finsvc_http_request_duration_seconds",
			Help:    "HTTP request latency by method, route pattern and status.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"method", "route", "status"}),
	}
	m.reg.MustRegister(
		m.duration, deliveries, tokenChecks, rateLimited, rateLimitFallbacks,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	if d != nil {
		m.reg.MustRegister(newOutboxDepth(d, 5*time.Second))
	}
	return m
}

// Registry is the private registry (tests, extra collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Register adds GET /metrics to e (an operational path: any host).
func (m *Metrics) Register(e *echo.Echo) {
	e.GET("/metrics", echo.WrapHandler(m.Handler()))
}

// Middleware observes the latency of every request that reaches it
// (httpapi.Deps.Middleware: everything past tenant resolution, plus the
// operational endpoints) by method, route pattern and final status.
func (m *Metrics) Middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			status := c.Response().Status
			if err != nil && !c.Response().Committed {
				status = httpapi.Status(err) // rendered later by the error handler
			}
			route := c.Path()
			if route == "" || strings.HasSuffix(route, "/*") {
				route = "unmatched" // no route: the raw path must not become a label
			}
			m.observer(c.Request().Method, route, status).Observe(time.Since(start).Seconds())
			return err
		}
	}
}

// Authenticator wraps a bearer authenticator and counts its outcomes
// (finsvc_token_checks_total).
func Authenticator(a httpapi.Authenticator) httpapi.Authenticator { return countingAuth{a} }

type countingAuth struct{ next httpapi.Authenticator }

func (c countingAuth) AuthenticateBearer(ctx context.Context, token string) (*auth.Principal, error) {
	p, err := c.next.AuthenticateBearer(ctx, token)
	switch {
	case err == nil && p != nil:
		TokenCheck(TokenValid)
	case err == nil, apperr.Is(err, apperr.Unauthenticated):
		TokenCheck(TokenInvalid)
	case errors.Is(err, context.Canceled):
		// The client went away; not a failure of the check.
	default:
		TokenCheck(TokenError)
	}
	return p, err
}

// outboxDepth reports deliveries that are pending or in flight. The count is
// one indexed query (deliveries_claim_idx is partial on exactly these
// statuses), cached for ttl so that frequent scrapes from several
// Prometheus servers cost at most one query per ttl. It is deliberately
// across tenants: an operational figure, never shown to a tenant.
type outboxDepth struct {
	db   *db.DB
	ttl  time.Duration
	desc *prometheus.Desc
	errs prometheus.Counter

	mu      sync.Mutex
	at      time.Time
	value   float64
	ok      bool
	nowFunc func() time.Time
}

func newOutboxDepth(d *db.DB, ttl time.Duration) *outboxDepth {
	return &outboxDepth{
		db: d, ttl: ttl, nowFunc: time.Now,
		desc: prometheus.NewDesc("finsvc_outbox_depth", "Webhook deliveries pending or in flight, across tenants (cached a few seconds).", nil, nil),
		errs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "finsvc_outbox_depth_query_errors_total",
			Help: "Failed outbox depth queries (the gauge is then absent).",
		}),
	}
}

func (o *outboxDepth) Describe(ch chan<- *prometheus.Desc) {
	ch <- o.desc
	o.errs.Describe(ch)
}

func (o *outboxDepth) Collect(ch chan<- prometheus.Metric) {
	if v, ok := o.depth(); ok {
		ch <- prometheus.MustNewConstMetric(o.desc, prometheus.GaugeValue, v)
	}
	o.errs.Collect(ch)
}

func (o *outboxDepth) depth() (float64, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.nowFunc()
	if o.ok && now.Sub(o.at) < o.ttl {
		return o.value, true
	}
	// A scrape makes no trace (suppress): the scrape itself is not traced.
	ctx, cancel := context.WithTimeout(suppress.Context(context.Background()), 2*time.Second)
	defer cancel()
	// The outbox package owns the deliveries table and its depth query.
	pending, delivering, err := outbox.Depth(ctx, o.db)
	if err != nil {
		o.errs.Inc()
		o.ok = false
		return 0, false
	}
	o.at, o.value, o.ok = now, float64(pending+delivering), true
	return o.value, true
}
