// Package metrics exposes the service's Prometheus metrics at GET /metrics,
// on a private registry (nothing a library registers globally leaks in):
//
//   - finsvc_http_request_duration_seconds{method,route,status}: latency by
//     route pattern (never the raw path, so ids do not explode cardinality);
//   - finsvc_token_checks_total{outcome}: bearer token checks (valid,
//     invalid, error);
//   - finsvc_outbox_depth: deliveries pending or in flight, across tenants;
//   - finsvc_webhook_deliveries_total{outcome}: delivery attempts by outcome;
//   - finsvc_webhook_delivery_failures_total{reason}: those that did not
//     succeed, by reason (status class, timeout, connection refused, …);
//   - finsvc_outbox_oldest_pending_age_seconds, finsvc_webhook_endpoints{state},
//     finsvc_webhook_endpoint_longest_failure_seconds: see outboxDepth;
//   - go_sql_*{db_name="finsvc"}: the database pool (database/sql's DBStats);
//   - finsvc_rate_limited_total{budget}: requests refused with 429 (budgets:
//     api and oauth per tenant; auth and authorize per client address);
//   - finsvc_rate_limit_fallbacks_total: rate-limit decisions taken in
//     process because the shared store (Redis) failed;
//   - finsvc_db_sync_standbys, finsvc_db_replication_lag_seconds: the
//     database primary's synchronous standbys and their lag (PostgreSQL;
//     see replication);
//   - the Go runtime and process collectors.
//
// The counters that other packages feed (DeliveryOutcome, TokenCheck) are
// package-level so that callers need no handle; every Metrics registers them.
package metrics

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tracing/suppress"
	"github.com/finsvc/finsvc/internal/webhooks/delivery"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
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
	deliveryFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "finsvc_webhook_delivery_failures_total",
		Help: "Webhook delivery attempts (and deliveries dropped before one) that did not succeed, by reason.",
	}, []string{"reason"})
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
	for _, o := range delivery.Counted {
		deliveries.WithLabelValues(string(o))
	}
	for _, r := range delivery.Reasons {
		deliveryFailures.WithLabelValues(r)
	}
	for _, o := range []string{TokenValid, TokenInvalid, TokenError} {
		tokenCounters[o] = tokenChecks.WithLabelValues(o)
	}
}

// DeliveryOutcome counts one webhook delivery attempt by its outcome, the
// label, and one that did not succeed by its reason (a small fixed set:
// delivery.Reasons); an outcome that does not end an attempt
// (delivery.Counted) is not counted. Safe for concurrent use; a
// delivery.Observer.
func DeliveryOutcome(r delivery.Result) {
	if !r.Outcome.IsCounted() {
		return
	}
	deliveries.WithLabelValues(string(r.Outcome)).Inc()
	if reason := r.Reason(); reason != "" {
		deliveryFailures.WithLabelValues(reason).Inc()
	}
}

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
	reg        *prometheus.Registry
	collectors []prometheus.Collector // what reg serves
	duration   *prometheus.HistogramVec
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
	m.collectors = []prometheus.Collector{
		m.duration, deliveries, deliveryFailures, tokenChecks, rateLimited, rateLimitFallbacks,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}
	if d != nil {
		m.collectors = append(m.collectors, newOutboxDepth(d, 5*time.Second), newReplication(d, 5*time.Second))
		// The serving pool: go_sql_{open,in_use,idle,max_open}_connections,
		// go_sql_wait_count_total, go_sql_wait_duration_seconds_total, …
		if sqlDB, err := d.DB.DB(); err == nil {
			m.collectors = append(m.collectors, collectors.NewDBStatsCollector(sqlDB, "finsvc"))
		}
	}
	m.reg.MustRegister(m.collectors...)
	return m
}

// Names lists the name of every metric family the registry serves, series
// or not yet (a vector before its first observation), as PromQL names it
// (histograms: the family name, without _bucket, _sum and _count). Tests
// check dashboards and alert rules against it.
func (m *Metrics) Names() map[string]bool {
	names := map[string]bool{}
	ch := make(chan *prometheus.Desc)
	go func() {
		for _, c := range m.collectors {
			c.Describe(ch)
		}
		close(ch)
	}()
	for d := range ch {
		if s := fqName.FindStringSubmatch(d.String()); s != nil {
			names[s[1]] = true
		}
	}
	return names
}

// fqName reads a Desc's name from its String (Desc has no accessor).
var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

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
// operational endpoints) by method, route pattern and final status. status
// is the status the API's error handler will answer an error with
// (httpapi.Status), given by the composition root so that metrics stays
// below the adapter it observes.
func (m *Metrics) Middleware(status func(error) int) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			code := c.Response().Status
			if err != nil && !c.Response().Committed {
				code = status(err) // rendered later by the error handler
			}
			route := c.Path()
			if route == "" || strings.HasSuffix(route, "/*") {
				route = "unmatched" // no route: the raw path must not become a label
			}
			m.observer(c.Request().Method, route, code).Observe(time.Since(start).Seconds())
			return err
		}
	}
}

// BearerAuthenticator checks a bearer token (httpapi.Authenticator, the
// same method: stated here so that metrics stays below the adapter).
type BearerAuthenticator interface {
	AuthenticateBearer(ctx context.Context, token string) (*auth.Principal, error)
}

// Authenticator wraps a bearer authenticator and counts its outcomes
// (finsvc_token_checks_total).
func Authenticator(a BearerAuthenticator) BearerAuthenticator { return countingAuth{a} }

type countingAuth struct{ next BearerAuthenticator }

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

// outboxDepth reports the outbox and the endpoints' health, across tenants
// (an operational figure, never shown to a tenant):
//
//   - finsvc_outbox_depth: deliveries pending or in flight;
//   - finsvc_outbox_oldest_pending_age_seconds: how long the delivery that
//     has waited longest for a worker has been due (0 when none is due);
//     a delivery waiting for its next scheduled retry is not due;
//   - finsvc_webhook_endpoints{state}: active registrations by circuit
//     state (healthy, failing, backing_off);
//   - finsvc_webhook_endpoint_longest_failure_seconds: how long the
//     longest current run of failures of an active registration has
//     lasted (0 when none is failing; disabled at 5 days).
//
// They come from a few indexed queries (outbox.ReadStats), cached for ttl
// so that frequent scrapes from several Prometheus servers cost at most one
// round of queries per ttl.
type outboxDepth struct {
	db        *db.DB
	ttl       time.Duration
	desc      *prometheus.Desc
	age       *prometheus.Desc
	endpoints *prometheus.Desc
	failing   *prometheus.Desc
	errs      prometheus.Counter

	mu      sync.Mutex
	at      time.Time
	stats   outbox.Stats
	ok      bool
	nowFunc func() time.Time
}

func newOutboxDepth(d *db.DB, ttl time.Duration) *outboxDepth {
	return &outboxDepth{
		db: d, ttl: ttl, nowFunc: time.Now,
		desc: prometheus.NewDesc("finsvc_outbox_depth", "Webhook deliveries pending or in flight, across tenants (cached a few seconds).", nil, nil),
		age: prometheus.NewDesc("finsvc_outbox_oldest_pending_age_seconds",
			"Seconds the longest-waiting due webhook delivery has been due, across tenants; 0 when none is due.", nil, nil),
		endpoints: prometheus.NewDesc("finsvc_webhook_endpoints",
			"Active webhook registrations by circuit-breaker state (healthy, failing, backing_off), across tenants.", []string{"state"}, nil),
		failing: prometheus.NewDesc("finsvc_webhook_endpoint_longest_failure_seconds",
			"Seconds the longest current run of failed deliveries of an active webhook registration has lasted; 0 when none fails.", nil, nil),
		errs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "finsvc_outbox_depth_query_errors_total",
			Help: "Failed outbox and endpoint health queries (their gauges are then absent).",
		}),
	}
}

func (o *outboxDepth) Describe(ch chan<- *prometheus.Desc) {
	ch <- o.desc
	ch <- o.age
	ch <- o.endpoints
	ch <- o.failing
	o.errs.Describe(ch)
}

func (o *outboxDepth) Collect(ch chan<- prometheus.Metric) {
	if s, now, ok := o.read(); ok {
		ch <- prometheus.MustNewConstMetric(o.desc, prometheus.GaugeValue, float64(s.Pending+s.Delivering))
		ch <- prometheus.MustNewConstMetric(o.age, prometheus.GaugeValue, since(now, s.OldestDue))
		for _, st := range []outbox.HealthState{outbox.Healthy, outbox.Failing, outbox.BackingOff} {
			ch <- prometheus.MustNewConstMetric(o.endpoints, prometheus.GaugeValue, float64(s.Endpoints[st]), string(st))
		}
		ch <- prometheus.MustNewConstMetric(o.failing, prometheus.GaugeValue, since(now, s.FailingSince))
	}
	o.errs.Collect(ch)
}

// since is the seconds from t to now, 0 for a zero t (or one ahead).
func since(now, t time.Time) float64 {
	if t.IsZero() || !now.After(t) {
		return 0
	}
	return now.Sub(t).Seconds()
}

func (o *outboxDepth) depth() (float64, bool) {
	s, _, ok := o.read()
	return float64(s.Pending + s.Delivering), ok
}

// read returns the cached stats and the time they were read at (ages are
// measured from then, so that a cached age does not stand still).
func (o *outboxDepth) read() (outbox.Stats, time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.nowFunc()
	if o.ok && now.Sub(o.at) < o.ttl {
		return o.stats, now, true
	}
	// A scrape makes no trace (suppress): the scrape itself is not traced.
	ctx, cancel := context.WithTimeout(suppress.Context(context.Background()), 2*time.Second)
	defer cancel()
	// The outbox package owns the deliveries and webhooks tables and their
	// queries.
	s, err := outbox.ReadStats(ctx, o.db, now)
	if err != nil {
		o.errs.Inc()
		o.ok = false
		return outbox.Stats{}, now, false
	}
	o.at, o.stats, o.ok = now, s, true
	return s, now, true
}
