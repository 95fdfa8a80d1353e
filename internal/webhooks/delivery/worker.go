// Package delivery runs the durable outbox's delivery workers: it claims due
// delivery rows, POSTs the signed event envelope to the registration's
// target through the SSRF-guarded client, and records the outcome in the
// same row, which is also the delivery log. The rows are read and written
// through internal/webhooks/outbox.
//
// Claims. A worker claims due rows (outbox.Claim) and stamps each with a
// lease (lease_owner, lease_expires_at). A row is claimable when it is
// pending and due, or when it is delivering but its lease has expired (its
// worker died). The lease is longer than any attempt can take, and every
// write of an outcome is conditional on still holding the lease
// (outbox.Finish), so one delivery is never attempted by two workers or
// replicas at once, and a crashed worker's claims come back once their
// leases expire: delivery is at least once.
//
// Wake-ups. outbox.Emit issues pg_notify inside the business transaction
// (delivered at commit) and calls the in-process Notifier; the worker
// LISTENs on PostgreSQL and also polls, so nothing depends on a
// notification arriving.
//
// Shutdown. Stop stops claiming, lets attempts in flight finish within the
// caller's grace period, and then aborts the rest and releases their leases
// so that another replica picks them up at once. Cancelling the context
// given to Start is an abrupt stop (like a crash): nothing is released and
// the leases simply expire.
package delivery

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/tracing/suppress"
	"github.com/finsvc/finsvc/internal/webhooks/httpclient"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
	"github.com/finsvc/finsvc/internal/webhooks/retry"
	"github.com/finsvc/finsvc/pkg/webhooks/sign"
)

// Defaults.
const (
	DefaultConcurrency         = 32
	DefaultEndpointConcurrency = 2
	DefaultPollInterval        = time.Second
	// leaseMargin is added to the attempt timeout to form the lease: the
	// load before and the write after an attempt must fit in it too.
	leaseMargin = 45 * time.Second
	// releaseTimeout bounds writing a release or an outcome after the
	// attempt context is gone.
	releaseTimeout = 5 * time.Second
	// claimTimeout bounds one claim statement.
	claimTimeout = 10 * time.Second
	// secretRetry postpones a delivery this replica cannot sign.
	secretRetry = 5 * time.Minute
)

// Outcome of one claimed delivery, as reported to an Observer.
type Outcome string

// Outcomes. Attempted ones also carry the HTTP status, if any. Counted
// lists those that end an attempt (the labels of internal/metrics'
// finsvc_webhook_deliveries_total); Released and LeaseLost do not.
const (
	Succeeded Outcome = "succeeded" // 2xx
	Retrying  Outcome = "retry"     // failed attempt, another is scheduled
	Failed    Outcome = "failed"    // attempts exhausted, deadline passed, or blocked
	Disabled  Outcome = "disabled"  // 410: the registration was deactivated
	Cancelled Outcome = "cancelled" // the registration is no longer eligible
	Released  Outcome = "released"  // aborted by Stop; the lease was handed back
	LeaseLost Outcome = "lease_lost"
)

// Counted are the outcomes of an attempt, each counted once per attempt.
var Counted = []Outcome{Succeeded, Retrying, Failed, Disabled, Cancelled}

// IsCounted reports whether o is one of Counted.
func (o Outcome) IsCounted() bool { return slices.Contains(Counted, o) }

// Result describes what happened to one claimed delivery.
type Result struct {
	TenantID   int64
	DeliveryID string
	EventID    string
	WebhookID  int64
	Outcome    Outcome
	StatusCode int           // 0 when no response came
	Error      string        // httpclient.Describe of the failure, if any
	Duration   time.Duration // of the HTTP attempt

	err error // the HTTP attempt's, for the span's status (httpclient.Reason)
}

// Option configures a Worker.
type Option func(*Worker)

// WithNow injects the clock (tests drive retries without sleeping).
func WithNow(now func() time.Time) Option { return func(w *Worker) { w.now = now } }

// WithRand injects the jitter source (retry.Delay's rnd).
func WithRand(rnd func() float64) Option { return func(w *Worker) { w.rnd = rnd } }

// WithClientOptions builds the delivery client from opts (RootCAs for a TLS
// test receiver, LookupNetIP, …); AllowPrivate and Timeout come from the
// configuration unless set here.
func WithClientOptions(opts httpclient.Options) Option {
	return func(w *Worker) { o := opts; w.clientOpts = &o }
}

// WithConcurrency sets how many deliveries one worker attempts at once
// (default: the configuration's WebhookConcurrency).
func WithConcurrency(n int) Option { return func(w *Worker) { w.concurrency = n } }

// WithEndpointConcurrency sets how many attempts may be in flight for one
// registration across all workers (default: the configuration's
// WebhookEndpointConcurrency).
func WithEndpointConcurrency(n int) Option { return func(w *Worker) { w.endpointCap = n } }

// WithPollInterval sets the fallback poll period.
func WithPollInterval(d time.Duration) Option { return func(w *Worker) { w.poll = d } }

// WithLease sets the lease length (it must exceed the attempt timeout).
func WithLease(d time.Duration) Option { return func(w *Worker) { w.lease = d } }

// WithOwner names this worker in lease_owner (default host-pid-random).
func WithOwner(owner string) Option { return func(w *Worker) { w.owner = owner } }

// TracerName is the instrumentation scope of the delivery attempt spans.
const TracerName = "github.com/finsvc/finsvc/internal/webhooks/delivery"

// WithTracerProvider makes each attempt a span of tp's, continuing the
// trace of the request that caused the event (tracing on, internal/app).
// Without it attempts make no spans, but still forward the stored
// traceparent.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(w *Worker) { w.tracer = tp.Tracer(TracerName) }
}

// WithObserver is called after every claimed delivery (metrics, tests).
func WithObserver(fn func(Result)) Option { return func(w *Worker) { w.observe = fn } }

// Worker delivers webhooks. Create it with NewWorker, run it with Start, and
// stop it with Stop.
type Worker struct {
	db          *db.DB
	box         *sealing.Box
	logger      *slog.Logger
	client      *http.Client
	clientOpts  *httpclient.Options
	policy      outbox.Policy
	loadJob     string // loadJobSQL with the policy's eligibility column
	timeout     time.Duration
	now         func() time.Time
	rnd         func() float64
	concurrency int
	endpointCap int
	poll        time.Duration
	lease       time.Duration
	listenURL   string // LISTEN on a session of its own there; "": a pooled connection
	owner       string
	observe     func(Result)
	tracer      trace.Tracer

	signal *Signal
	slots  chan struct{}

	// held are the deliveries this worker is attempting; orphans says a
	// claim failed, so rows may be leased to this worker that it does not
	// attempt (a COMMIT applied whose answer was lost): the loop hands
	// them back before it claims again (releaseOrphans).
	heldMu  sync.Mutex
	held    map[outbox.Held]struct{}
	orphans bool

	startOnce, stopOnce sync.Once
	started             atomic.Bool
	runCtx              context.Context // cancelled: abrupt stop
	kill                context.CancelFunc
	attemptCtx          context.Context // cancelled: Stop's grace period is over
	abortAttempts       context.CancelFunc
	releasing           atomic.Bool
	stopping            chan struct{}
	loopDone            chan struct{}
	inflight            sync.WaitGroup
}

// NewWorker builds a worker over d that opens signing secrets with box. cfg
// supplies the attempt timeout (WebhookTimeout) and the SSRF switch
// (WebhookAllowPrivate), which also admits http:// targets.
func NewWorker(d *db.DB, box *sealing.Box, cfg *config.Config, logger *slog.Logger, opts ...Option) (*Worker, error) {
	if box == nil {
		return nil, errors.New("delivery: no secret box to open signing secrets with")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w := &Worker{
		db: d, box: box, logger: logger.With("component", "webhook-delivery"),
		policy: outbox.Policy{AllowHTTP: cfg.WebhookAllowPrivate}, timeout: cfg.WebhookTimeout,
		now: time.Now, concurrency: cfg.WebhookConcurrency, endpointCap: cfg.WebhookEndpointConcurrency,
		poll:   DefaultPollInterval,
		signal: NewSignal(),
		tracer: noop.NewTracerProvider().Tracer(TracerName),
	}
	if w.timeout <= 0 {
		w.timeout = httpclient.DefaultTimeout
	}
	for _, o := range opts {
		o(w)
	}
	co := httpclient.Options{}
	if w.clientOpts != nil {
		co = *w.clientOpts
	}
	co.AllowPrivate = co.AllowPrivate || cfg.WebhookAllowPrivate
	if co.Timeout == 0 {
		co.Timeout = w.timeout
	}
	w.timeout = co.Timeout
	w.client = httpclient.New(co)
	w.loadJob = fmt.Sprintf(loadJobSQL, w.policy.IneligibleSQL())
	if w.lease == 0 {
		w.lease = cfg.WebhookLease
	}
	if u := cfg.SessionDatabaseURL(); strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://") {
		w.listenURL = u
	}
	if w.lease == 0 {
		w.lease = w.timeout + leaseMargin
	}
	if w.lease <= w.timeout {
		return nil, fmt.Errorf("delivery: lease %s must exceed the attempt timeout %s", w.lease, w.timeout)
	}
	if w.concurrency < 1 {
		w.concurrency = DefaultConcurrency
	}
	if w.endpointCap < 1 {
		w.endpointCap = DefaultEndpointConcurrency
	}
	if w.owner == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		w.owner = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	w.slots = make(chan struct{}, w.concurrency)
	w.stopping = make(chan struct{})
	w.loopDone = make(chan struct{})
	return w, nil
}

// Notifier returns the in-process wake-up signal; plug it into
// outbox.Outbox.Notifier and httpapi.Deps.WebhookNotifier.
func (w *Worker) Notifier() outbox.Notifier { return w.signal }

// Owner is the lease owner name of this worker.
func (w *Worker) Owner() string { return w.owner }

func (w *Worker) clock() time.Time { return db.Clock(w.now).Now() }

// Start runs the worker in the background until Stop (graceful) or until
// ctx is cancelled (abrupt: attempts are abandoned, leases expire).
func (w *Worker) Start(ctx context.Context) error {
	if w.started.Swap(true) {
		return errors.New("delivery: worker already started")
	}
	w.init(ctx)
	if w.db.Dialect == db.Postgres {
		go w.listen()
	}
	go w.loop()
	return nil
}

func (w *Worker) init(ctx context.Context) {
	w.startOnce.Do(func() {
		w.runCtx, w.kill = context.WithCancel(ctx)
		w.attemptCtx, w.abortAttempts = context.WithCancel(w.runCtx)
	})
}

// Stop stops claiming, waits for attempts in flight until ctx is done, then
// aborts the remaining ones and releases their leases. It returns once every
// attempt has ended.
func (w *Worker) Stop(ctx context.Context) error {
	w.init(context.Background())
	w.stopOnce.Do(func() { close(w.stopping) })
	if w.started.Load() {
		<-w.loopDone
	}
	done := make(chan struct{})
	go func() { w.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		w.releasing.Store(true)
		w.abortAttempts()
		<-done
	}
	w.kill()
	return nil
}

func (w *Worker) loop() {
	defer close(w.loopDone)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-w.stopping:
			return
		case <-w.runCtx.Done():
			return
		case <-timer.C:
		case <-w.signal.C():
		}
		if w.orphans {
			w.releaseOrphans()
		}
		for {
			free := w.concurrency - len(w.slots)
			if free == 0 {
				break // a finishing delivery signals
			}
			n, err := w.claimAndStart(free)
			if err != nil {
				if w.runCtx.Err() == nil {
					w.logger.Error("claim deliveries", "err", err)
					w.orphans = true
				}
				break
			}
			if n < free {
				break
			}
		}
		timer.Reset(w.poll)
	}
}

// RunOnce claims up to the worker's concurrency of due deliveries, attempts
// them, waits for them and returns how many it claimed. It is for tests and
// tools that drive the worker step by step (with WithNow); don't mix it with
// Start.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	w.init(ctx)
	rows, until, err := w.claim(ctx, w.concurrency)
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	for _, c := range rows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.process(c, until)
		}()
	}
	wg.Wait()
	return len(rows), nil
}

func (w *Worker) claimAndStart(n int) (int, error) {
	rows, until, err := w.claim(w.runCtx, n)
	if err != nil {
		return 0, err
	}
	for _, c := range rows {
		w.slots <- struct{}{}
		w.inflight.Add(1)
		h := outbox.Held{TenantID: c.TenantID, ID: c.ID}
		w.heldMu.Lock()
		if w.held == nil {
			w.held = map[outbox.Held]struct{}{}
		}
		w.held[h] = struct{}{}
		w.heldMu.Unlock()
		go func() {
			defer func() {
				w.heldMu.Lock()
				delete(w.held, h)
				w.heldMu.Unlock()
				<-w.slots
				w.inflight.Done()
				// Always look again: a claim may have left due rows
				// behind because their registration was at its cap, and
				// this attempt's end may have made room.
				w.signal.Notify()
			}()
			w.process(c, until)
		}()
	}
	return len(rows), nil
}

// releaseOrphans hands back the rows leased to this worker that it is not
// attempting (outbox.ReleaseOrphans), once a claim has failed; it tries
// again before the next claim while the database does not answer. Only the
// loop claims, so no claim can add rows while it runs; an attempt that
// ends meanwhile has recorded its outcome (or let its row go) already.
func (w *Worker) releaseOrphans() {
	w.heldMu.Lock()
	held := make([]outbox.Held, 0, len(w.held))
	for h := range w.held {
		held = append(held, h)
	}
	w.heldMu.Unlock()
	ctx, cancel := context.WithTimeout(suppress.Context(w.runCtx), releaseTimeout)
	defer cancel()
	n, err := outbox.ReleaseOrphans(ctx, w.db, w.owner, held, w.clock())
	if err != nil {
		if w.runCtx.Err() == nil {
			w.logger.Warn("hand back deliveries a failed claim may have leased", "err", err)
		}
		return
	}
	w.orphans = false
	if n > 0 {
		w.logger.Info("handed back deliveries a failed claim had leased", "count", n)
	}
}

// claim leases up to n due deliveries to this worker, until the time it
// returns.
func (w *Worker) claim(ctx context.Context, n int) ([]outbox.Claimed, time.Time, error) {
	now := w.clock()
	// A poll that finds nothing must not make a trace (one a second per
	// idle replica): the claim makes no span. Each delivery it claims is
	// traced from its own span (process).
	until := now.Add(w.lease)
	// Bounded: behind a pooler an unreachable database is a wait for a
	// server connection, not an error, and a claim that never ends would
	// never tell the loop to hand back what a lost claim leased.
	ctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	rows, err := outbox.Claim(suppress.Context(ctx), w.db, outbox.ClaimRequest{
		Owner: w.owner, N: n, EndpointCap: w.endpointCap, Now: now, LeaseUntil: until})
	return rows, until, err
}

// process takes one claimed delivery through its attempt: load what the
// attempt needs, attempt it (or decide that it must not be attempted), and
// record the outcome under the lease, which ends at until.
func (w *Worker) process(c outbox.Claimed, until time.Time) {
	res := Result{TenantID: c.TenantID, DeliveryID: c.ID, EventID: c.EventID, WebhookID: c.WebhookID}
	defer func() {
		if w.observe != nil && res.Outcome != "" {
			w.observe(res)
		}
	}()
	log := w.logger.With("tenant_id", c.TenantID, "delivery_id", c.ID, "webhook_id", c.WebhookID)
	if w.runCtx.Err() != nil {
		return
	}
	// The load runs before the span exists, since it reads the trace
	// context the span continues; it makes no span of its own and is
	// recorded as the span's first child once the span starts (loadSpan).
	// Every later statement of the delivery runs in the span's context.
	loadStart := time.Now()
	j, err := w.load(suppress.Context(w.runCtx), c)
	loadEnd := time.Now()
	if err != nil {
		if w.runCtx.Err() == nil {
			log.Error("load delivery", "err", err)
			// Hand the row back as soon as the database answers, rather
			// than leave it delivering until the lease ends.
			now := w.clock()
			res.Outcome = Released
			w.record(w.runCtx, log, c, until, &res, verdict{update: outbox.Update{Status: outbox.Pending, NextAttemptAt: &now}})
		}
		return
	}
	if j == nil {
		return // deleted with its registration meanwhile
	}
	ctx, span := w.startSpan(w.runCtx, c, j, loadStart)
	defer endSpan(span, &res)
	w.loadSpan(ctx, loadStart, loadEnd)
	v, ok := w.attempt(ctx, log, c, j, &res)
	if !ok {
		return // abrupt stop: record nothing, the lease expires
	}
	w.record(ctx, log, c, until, &res, v)
}

// job is everything one attempt needs, loaded after the claim.
type job struct {
	registry.Webhook
	// Ineligible is why the registration may no longer receive the event
	// (outbox.Policy.IneligibleSQL), or empty.
	Ineligible string     `gorm:"column:ineligible"`
	Kind       string     `gorm:"column:kind"`
	Payload    string     `gorm:"column:payload"`
	OccurredAt time.Time  `gorm:"column:occurred_at"`
	ExpiresAt  *time.Time `gorm:"column:expires_at"`
	// Traceparent is the W3C trace context of the request that caused the
	// event, if it was traced.
	Traceparent *string `gorm:"column:traceparent"`
	// TenantSlug names the tenant on the span.
	TenantSlug string `gorm:"column:tenant_slug"`
}

// loadJobSQL reads a claimed delivery's registration and event; %s is the
// eligibility column (the registrations table must keep the name webhooks).
const loadJobSQL = `SELECT webhooks.*, %s AS ineligible, e.kind, e.payload, e.occurred_at, e.expires_at, e.traceparent, t.slug AS tenant_slug
FROM deliveries d
JOIN webhooks ON webhooks.tenant_id = d.tenant_id AND webhooks.id = d.webhook_id
JOIN events e ON e.tenant_id = d.tenant_id AND e.id = d.event_id
JOIN tenants t ON t.id = d.tenant_id
WHERE d.tenant_id = ? AND d.id = ? AND d.lease_owner = ?`

// load returns the claimed delivery's job, or nil when the row is gone.
func (w *Worker) load(ctx context.Context, c outbox.Claimed) (*job, error) {
	var jobs []job
	if err := w.db.WithContext(ctx).Raw(w.loadJob, c.TenantID, c.ID, w.owner).Scan(&jobs).Error; err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	return &jobs[0], nil
}

// verdict is what becomes of a claimed delivery: the update of its row and,
// after a 410, the deactivation of its registration.
type verdict struct {
	update  outbox.Update
	disable bool
}

// final ends a delivery with status for reason, without an attempt.
func final(status outbox.Status, reason string) verdict {
	return verdict{update: outbox.Update{Status: status, LastError: &reason}}
}

// goneReason is why a registration is disabled after a 410.
const goneReason = "target answered 410 Gone"

// envelope is the delivery body. data is the stored payload verbatim.
type envelope struct {
	ID         string          `json:"id"`
	Event      string          `json:"event"`
	OccurredAt time.Time       `json:"occurred_at"`
	Data       json.RawMessage `json:"data"`
}

// attemptDeadline is how long one attempt may take under a lease.
func attemptDeadline(lease, timeout time.Duration) time.Duration {
	return timeout + (lease-timeout)*2/3
}

// attempt sends the delivery once, unless it must not be sent, and returns
// the verdict. ok is false after an abrupt stop, when nothing may be
// recorded.
func (w *Worker) attempt(ctx context.Context, log *slog.Logger, c outbox.Claimed, j *job, res *Result) (v verdict, ok bool) {
	// The attempt must end well within the lease so that nobody else can
	// claim the row while it is still in flight: it gets the attempt
	// timeout plus two thirds of what the lease holds beyond it (the load
	// before and the write after fit in the last third). Computed from the
	// configured lease, not the default margin: a short lease
	// (FINSVC_WEBHOOK_LEASE) must not leave a deadline already past.
	actx, cancel := context.WithTimeout(w.attemptCtx, attemptDeadline(w.lease, w.timeout))
	defer cancel()
	actx = trace.ContextWithSpan(actx, trace.SpanFromContext(ctx))
	req, v := w.request(actx, log, c, j, res)
	if req == nil {
		return v, true
	}
	r := w.send(req, res)
	switch {
	case w.runCtx.Err() != nil:
		return verdict{}, false
	case r.err != nil && w.releasing.Load() && w.attemptCtx.Err() != nil:
		// Stop's grace period is over: hand the delivery back uncounted.
		res.Outcome = Released
		now := w.clock()
		return verdict{update: outbox.Update{Status: outbox.Pending, NextAttemptAt: &now}}, true
	}
	return w.classify(c, j, r, res), true
}

// request builds the signed POST of the delivery. When the delivery must
// not be sent it returns nil and the verdict instead: the registration is no
// longer eligible, the event has expired, this replica cannot open the
// signing secret, or the stored event or target is unusable.
func (w *Worker) request(ctx context.Context, log *slog.Logger, c outbox.Claimed, j *job, res *Result) (*http.Request, verdict) {
	now := w.clock()
	// Eligibility is re-checked at every attempt: the registration may have
	// been deactivated, its user removed, or its target changed since the
	// event was written.
	if j.Ineligible != "" {
		res.Outcome, res.Error = Cancelled, j.Ineligible
		return nil, final(outbox.Cancelled, res.Error)
	}
	if j.ExpiresAt != nil && !now.Before(*j.ExpiresAt) {
		res.Outcome, res.Error = Failed, "event expired before it could be delivered"
		return nil, final(outbox.Failed, res.Error)
	}
	secrets, err := registry.OpenSecrets(w.box, &j.Webhook, now)
	if err != nil {
		// A replica with the wrong FINSVC_SECRET must not fail deliveries
		// that a correctly configured one can make: put the row back for
		// later without counting an attempt.
		log.ErrorContext(ctx, "open signing secret; is FINSVC_SECRET the same on every replica?", "err", err) // never the secret itself
		res.Outcome, res.Error = Released, "signing secret unavailable on this replica"
		v := final(outbox.Pending, res.Error)
		next := now.Add(secretRetry)
		v.update.NextAttemptAt = &next
		return nil, v
	}
	body, err := json.Marshal(envelope{ID: c.EventID, Event: j.Kind, OccurredAt: j.OccurredAt.UTC(), Data: json.RawMessage(j.Payload)})
	if err != nil {
		res.Outcome, res.Error = Failed, "stored payload is not valid JSON"
		log.ErrorContext(ctx, "build envelope", "err", err)
		return nil, final(outbox.Failed, res.Error)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.Target, bytes.NewReader(body))
	if err != nil {
		res.Outcome, res.Error = Failed, "invalid target URL"
		return nil, final(outbox.Failed, res.Error)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "finsvc-webhooks/1.0")
	sign.Sign(secrets, c.EventID, now, body).Apply(req.Header)
	// traceparent: the attempt's span, a child of the request that caused
	// the event, so that the receiver's work joins the same trace.
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	return req, verdict{}
}

// startSpan starts the delivery's span, from start (before the load), as a
// child of the trace context stored with the event (none: a new trace). It
// records ids, the tenant's slug and the event kind only, never the target
// URL (its query may hold an integrator's token), a header or the body.
func (w *Worker) startSpan(ctx context.Context, c outbox.Claimed, j *job, start time.Time) (context.Context, trace.Span) {
	if j.Traceparent != nil {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": *j.Traceparent})
	}
	return w.tracer.Start(ctx, "webhook.deliver", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start), trace.WithAttributes(
		attribute.String("finsvc.tenant", j.TenantSlug),
		attribute.String("finsvc.event.kind", j.Kind),
		attribute.String("finsvc.event.id", c.EventID),
		attribute.String("finsvc.delivery.id", c.ID),
		attribute.Int64("finsvc.webhook.id", c.WebhookID),
		attribute.Int("finsvc.delivery.attempt", c.Attempts+1),
	))
}

// loadSpan records the delivery's load, which ran before its span could
// start, as the span's first child, as the database instrumentation would
// have: the statement with placeholders only.
func (w *Worker) loadSpan(ctx context.Context, start, end time.Time) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return
	}
	system := "sqlite"
	if w.db.Dialect == db.Postgres {
		system = "postgresql"
	}
	_, s := w.tracer.Start(ctx, "gorm.Raw", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start),
		trace.WithAttributes(attribute.String("db.system.name", system), attribute.String("db.query.text", w.loadJob)))
	s.End(trace.WithTimestamp(end))
}

// endSpan records the delivery's outcome on its span and ends it. The
// status message names no target: a transport error is summarised by
// httpclient.Reason (its text would hold the target's host and port).
func endSpan(span trace.Span, res *Result) {
	if span.IsRecording() {
		span.SetAttributes(attribute.String("finsvc.delivery.outcome", string(res.Outcome)))
		if res.StatusCode != 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", res.StatusCode))
		}
		if res.Outcome != Succeeded && res.Outcome != "" && res.Error != "" {
			msg := res.Error
			if res.err != nil {
				msg = httpclient.Reason(res.err)
			}
			span.SetStatus(codes.Error, msg)
		}
	}
	span.End()
}

// response is what one HTTP attempt got.
type response struct {
	status     int // 0 when no response came
	retryAfter string
	excerpt    string
	err        error
	// sent are the request's kept headers (keptHeaders).
	sent map[string]string
}

// keptHeaders are the request headers kept with each attempt (the
// console's delivery page shows them): every header request sets. None
// holds a secret: the signatures are HMACs over the attempt. A header
// added to the request later is kept only once it is listed here, so that
// nothing secret is stored by accident.
var keptHeaders = []string{
	"Content-Type", "User-Agent", sign.HeaderSignature, sign.HeaderWebhookID,
	sign.HeaderWebhookTimestamp, sign.HeaderWebhookSignature, "traceparent",
}

// sentHeaders are h's kept headers, under the names the request used.
func sentHeaders(h http.Header) map[string]string {
	out := make(map[string]string, len(keptHeaders))
	for _, k := range keptHeaders {
		if v := h.Get(k); v != "" {
			out[k] = v
		}
	}
	return out
}

func (w *Worker) send(req *http.Request, res *Result) response {
	start := time.Now()
	resp, err := w.client.Do(req)
	r := response{err: err, sent: sentHeaders(req.Header)}
	if err == nil {
		r.status = resp.StatusCode
		r.retryAfter = resp.Header.Get("Retry-After")
		r.excerpt, _ = httpclient.ReadCapped(resp, httpclient.ExcerptLimit)
	}
	res.Duration = time.Since(start)
	res.StatusCode = r.status
	res.err = err
	return r
}

// classify turns the target's answer into the delivery's next state:
// succeeded, retried on the schedule (never past the event's expires_at),
// or failed; a 410 also disables the registration.
func (w *Worker) classify(c outbox.Claimed, j *job, r response, res *Result) verdict {
	now := w.clock()
	u := outbox.Update{Attempt: &outbox.Attempt{Number: c.Attempts + 1, At: now, StatusCode: r.status, Excerpt: r.excerpt, Duration: res.Duration, Headers: r.sent}}
	fail := func(lastError string) { u.Status, u.LastError = outbox.Failed, &lastError }
	switch retry.Classify(r.status, r.err) {
	case retry.Success:
		res.Outcome, u.Status = Succeeded, outbox.Succeeded
	case retry.Blocked:
		res.Outcome, res.Error = Failed, httpclient.Describe(r.err)
		fail(res.Error)
	case retry.Disable:
		res.Outcome, res.Error = Disabled, goneReason+"; registration disabled"
		fail(res.Error)
		return verdict{update: u, disable: true}
	default:
		if r.err != nil {
			res.Error = httpclient.Describe(r.err)
		} else {
			res.Error = fmt.Sprintf("target answered %d", r.status)
		}
		next, ok := retry.NextAfterResponse(c.Attempts+1, r.status, r.retryAfter, now, w.rnd)
		switch {
		case !ok:
			res.Outcome = Failed
			fail(res.Error + "; attempts exhausted")
		case j.ExpiresAt != nil && !next.Before(*j.ExpiresAt):
			res.Outcome = Failed
			fail(res.Error + "; retries stopped at the event's expires_at")
		default:
			res.Outcome = Retrying
			lastError := res.Error
			u.Status, u.NextAttemptAt, u.LastError = outbox.Pending, &next, &lastError
		}
	}
	return verdict{update: u}
}

// Retrying a record the database could not take: from recordRetryMin,
// doubling, at most recordRetryMax apart.
const (
	recordRetryMin = 100 * time.Millisecond
	recordRetryMax = 2 * time.Second
)

// record writes the verdict, conditional on still holding the lease (which
// ends at until), and logs it. A database that cannot take the write (down,
// a failover) is tried again, with a short backoff, for as long as the
// lease lasts: the outcome is recorded, and the row leaves delivering, as
// soon as the database answers again, not when the lease ends. It gives up
// at the lease's end (whoever claims the row then attempts it again) and
// when Stop's grace period is over or the worker is stopped abruptly.
func (w *Worker) record(sctx context.Context, log *slog.Logger, c outbox.Claimed, until time.Time, res *Result, v verdict) {
	// The attempt happened; record it even when Stop's grace period has
	// just run out, but not after an abrupt stop.
	base := context.WithoutCancel(sctx)
	var (
		held bool
		err  error
		now  time.Time
	)
	for delay := recordRetryMin; ; delay = min(delay*2, recordRetryMax) {
		ctx, cancel := context.WithTimeout(base, releaseTimeout)
		now = w.clock()
		var then func(*gorm.DB) error
		if v.disable {
			then = func(tx *gorm.DB) error { return registry.Disable(tx, c.TenantID, c.WebhookID, goneReason, now) }
		}
		held, err = outbox.Finish(ctx, w.db, c, w.owner, v.update, now, then)
		cancel()
		if err == nil {
			break
		}
		retry := (db.IsUnavailable(err) || db.IsOutcomeUnknown(err)) && w.clock().Add(delay).Before(until)
		log.ErrorContext(base, "record delivery outcome", "err", err, "retry", retry)
		if !retry {
			return // the lease expires and the row is tried again
		}
		select {
		case <-w.attemptCtx.Done():
			return
		case <-time.After(delay):
		}
	}
	ctx, cancel := context.WithTimeout(base, releaseTimeout)
	defer cancel()
	if !held {
		res.Outcome = LeaseLost
	}
	if held && v.update.Attempt != nil {
		// A 410 is a failed attempt too: health records it, so that the
		// registration's health and its disabling tell the same story.
		w.recordHealth(ctx, log, c, res, now, v.disable)
	}
	switch res.Outcome {
	case LeaseLost:
		log.WarnContext(ctx, "lease lost before the outcome was recorded")
	case Succeeded:
		log.DebugContext(ctx, "delivered", "status", res.StatusCode, "duration", res.Duration)
	default:
		log.InfoContext(ctx, "delivery attempt", "outcome", string(res.Outcome), "status", res.StatusCode, "error", res.Error)
	}
}

// recordHealth feeds the attempt's outcome to the registration's circuit
// breaker (outbox.RecordHealth) and disables a registration that has failed
// for outbox.AutoDisableAfter (unless the attempt has disabled it already:
// disabled, a 410). Health is advisory: an error is logged, and the
// delivery's own outcome is already recorded.
func (w *Worker) recordHealth(ctx context.Context, log *slog.Logger, c outbox.Claimed, res *Result, now time.Time, disabled bool) {
	disable, err := outbox.RecordHealth(ctx, w.db, c.TenantID, c.WebhookID, res.Outcome == Succeeded, res.Error, now)
	if err == nil && disable && !disabled {
		err = w.db.Tx(ctx, func(tx *gorm.DB) error {
			return registry.Disable(tx, c.TenantID, c.WebhookID, outbox.AutoDisableReason, now)
		})
		if err == nil {
			log.WarnContext(ctx, "registration disabled", "reason", outbox.AutoDisableReason)
		}
	}
	if err != nil {
		log.ErrorContext(ctx, "record endpoint health", "err", err)
	}
}

// Reasons a delivery did not succeed, as Result.Reason names them: a small
// fixed set, fit for a metric's label.
const (
	ReasonTimeout       = "timeout"
	ReasonRefused       = "connection_refused"
	ReasonReset         = "connection_reset"
	ReasonClosed        = "connection_closed"
	ReasonDNS           = "dns"
	ReasonTLS           = "tls"
	ReasonUnreachable   = "unreachable"
	ReasonBlocked       = "blocked"
	ReasonTransport     = "request_failed"
	ReasonStatus3xx     = "status_3xx"
	ReasonStatus4xx     = "status_4xx"
	ReasonStatus5xx     = "status_5xx"
	ReasonGone          = "gone"
	ReasonIneligible    = "ineligible"
	ReasonExpired       = "expired"
	ReasonInvalidEvent  = "invalid_event"
	ReasonInvalidTarget = "invalid_target"
)

// Reasons lists every Reason value.
var Reasons = []string{ReasonTimeout, ReasonRefused, ReasonReset, ReasonClosed, ReasonDNS, ReasonTLS, ReasonUnreachable,
	ReasonBlocked, ReasonTransport, ReasonStatus3xx, ReasonStatus4xx, ReasonStatus5xx, ReasonGone, ReasonIneligible,
	ReasonExpired, ReasonInvalidEvent, ReasonInvalidTarget}

// transportReasons maps httpclient.Reason's descriptions to Reasons.
var transportReasons = map[string]string{
	"timeout": ReasonTimeout, "connection refused": ReasonRefused, "connection reset": ReasonReset,
	"connection closed before a response": ReasonClosed, "DNS lookup failed": ReasonDNS,
	"TLS certificate not accepted": ReasonTLS, "TLS handshake failed": ReasonTLS,
	"target unreachable": ReasonUnreachable, "target address not allowed": ReasonBlocked,
}

// Reason is why an attempted or dropped delivery did not succeed, one of
// Reasons; "" for a success and for what is not an outcome of an attempt
// (released, lease lost).
func (r Result) Reason() string {
	switch r.Outcome {
	case Succeeded, Released, LeaseLost, "":
		return ""
	case Cancelled:
		return ReasonIneligible
	case Disabled:
		return ReasonGone
	}
	switch {
	case r.StatusCode >= 500:
		return ReasonStatus5xx
	case r.StatusCode >= 400:
		return ReasonStatus4xx
	case r.StatusCode >= 300:
		return ReasonStatus3xx
	case r.err != nil:
		if k, ok := transportReasons[httpclient.Reason(r.err)]; ok {
			return k
		}
		return ReasonTransport
	case strings.HasPrefix(r.Error, "event expired"):
		return ReasonExpired
	case strings.HasPrefix(r.Error, "invalid target"):
		return ReasonInvalidTarget
	}
	return ReasonInvalidEvent
}
