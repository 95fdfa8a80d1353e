// Package delivery runs the durable outbox's delivery workers: it claims due
// delivery rows, POSTs the signed event envelope to the registration's
// target through the SSRF-guarded client, and records the outcome in the
// same row, which is also the delivery log (DESIGN section 5).
//
// Claims. On PostgreSQL a worker claims due rows with FOR UPDATE SKIP LOCKED
// and stamps each with a lease (lease_owner, lease_expires_at); on SQLite a
// single UPDATE … RETURNING inside the write-locked transaction does the
// same. A row is claimable when it is pending and due, or when it is
// delivering but its lease has expired (its worker died). The lease is
// longer than any attempt can take, and every write of an outcome is
// conditional on still holding the lease, so one delivery is never
// attempted by two workers or replicas at once, and a crashed worker's
// claims come back once their leases expire: delivery is at least once.
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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/pkg/config"
	"github.com/finsvc/finsvc/pkg/db"
	"github.com/finsvc/finsvc/pkg/webhooks/httpclient"
	"github.com/finsvc/finsvc/pkg/webhooks/outbox"
	"github.com/finsvc/finsvc/pkg/webhooks/registry"
	"github.com/finsvc/finsvc/pkg/webhooks/retry"
	"github.com/finsvc/finsvc/pkg/webhooks/secretbox"
	"github.com/finsvc/finsvc/pkg/webhooks/sign"
)

// Defaults.
const (
	DefaultConcurrency  = 8
	DefaultPollInterval = time.Second
	// leaseMargin is added to the attempt timeout to form the lease: the
	// load before and the write after an attempt must fit in it too.
	leaseMargin = 45 * time.Second
	// releaseTimeout bounds writing a release or an outcome after the
	// attempt context is gone.
	releaseTimeout = 5 * time.Second
	// secretRetry postpones a delivery this replica cannot sign.
	secretRetry = 5 * time.Minute
)

// Outcome of one claimed delivery, as reported to an Observer.
type Outcome string

// Outcomes. Attempted ones also carry the HTTP status, if any. The first
// five match the labels of finsvc_webhook_deliveries_total (pkg/metrics).
const (
	Succeeded Outcome = "succeeded" // 2xx
	Retrying  Outcome = "retry"     // failed attempt, another is scheduled
	Failed    Outcome = "failed"    // attempts exhausted, deadline passed, or blocked
	Disabled  Outcome = "disabled"  // 410: the registration was deactivated
	Cancelled Outcome = "cancelled" // the registration is no longer eligible
	Released  Outcome = "released"  // aborted by Stop; the lease was handed back
	LeaseLost Outcome = "lease_lost"
)

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
}

// Option configures a Worker.
type Option func(*Worker)

// WithNow injects the clock (tests drive retries without sleeping).
func WithNow(now func() time.Time) Option { return func(w *Worker) { w.now = now } }

// WithRand injects the jitter source (retry.Delay's rnd).
func WithRand(rnd func() float64) Option { return func(w *Worker) { w.rnd = rnd } }

// WithHTTPClient replaces the delivery client (default httpclient.New from
// the configuration).
func WithHTTPClient(c *http.Client) Option { return func(w *Worker) { w.client = c } }

// WithClientOptions builds the delivery client from opts (RootCAs for a TLS
// test receiver, LookupNetIP, …); AllowPrivate and Timeout come from the
// configuration unless set here.
func WithClientOptions(opts httpclient.Options) Option {
	return func(w *Worker) { o := opts; w.clientOpts = &o }
}

// WithConcurrency sets how many deliveries one worker attempts at once.
func WithConcurrency(n int) Option { return func(w *Worker) { w.concurrency = n } }

// WithPollInterval sets the fallback poll period.
func WithPollInterval(d time.Duration) Option { return func(w *Worker) { w.poll = d } }

// WithLease sets the lease length (it must exceed the attempt timeout).
func WithLease(d time.Duration) Option { return func(w *Worker) { w.lease = d } }

// WithOwner names this worker in lease_owner (default host-pid-random).
func WithOwner(owner string) Option { return func(w *Worker) { w.owner = owner } }

// WithObserver is called after every claimed delivery (metrics, tests).
func WithObserver(fn func(Result)) Option { return func(w *Worker) { w.observe = fn } }

// Worker delivers webhooks. Create it with NewWorker, run it with Start, and
// stop it with Stop.
type Worker struct {
	db          *db.DB
	box         *secretbox.Box
	logger      *slog.Logger
	client      *http.Client
	clientOpts  *httpclient.Options
	allowHTTP   bool
	timeout     time.Duration
	now         func() time.Time
	rnd         func() float64
	concurrency int
	poll        time.Duration
	lease       time.Duration
	owner       string
	observe     func(Result)

	signal *Signal
	slots  chan struct{}

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
	backlog             atomic.Bool // the last claim filled every free slot
}

// NewWorker builds a worker over d. cfg supplies the sealing key (Secret),
// the attempt timeout (WebhookTimeout) and the SSRF switch
// (WebhookAllowPrivate).
func NewWorker(d *db.DB, cfg *config.Config, logger *slog.Logger, opts ...Option) (*Worker, error) {
	box, err := secretbox.New(cfg.Secret)
	if err != nil {
		return nil, fmt.Errorf("delivery: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w := &Worker{
		db: d, box: box, logger: logger.With("component", "webhook-delivery"),
		allowHTTP: cfg.WebhookAllowPrivate, timeout: cfg.WebhookTimeout,
		now: time.Now, concurrency: DefaultConcurrency, poll: DefaultPollInterval,
		signal: NewSignal(),
	}
	if w.timeout <= 0 {
		w.timeout = httpclient.DefaultTimeout
	}
	for _, o := range opts {
		o(w)
	}
	if w.client == nil {
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
	} else if w.client.Timeout > 0 {
		w.timeout = w.client.Timeout
	}
	if w.lease == 0 {
		w.lease = w.timeout + leaseMargin
	}
	if w.lease <= w.timeout {
		return nil, fmt.Errorf("delivery: lease %s must exceed the attempt timeout %s", w.lease, w.timeout)
	}
	if w.concurrency < 1 {
		w.concurrency = 1
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

func (w *Worker) clock() time.Time { return w.now().UTC().Truncate(time.Microsecond) }

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
		for {
			free := w.concurrency - len(w.slots)
			if free == 0 {
				break // a finishing delivery signals when backlog is set
			}
			n, err := w.claimAndStart(free)
			if err != nil {
				if w.runCtx.Err() == nil {
					w.logger.Error("claim deliveries", "err", err)
				}
				break
			}
			w.backlog.Store(n == free)
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
	rows, err := w.claim(ctx, w.concurrency)
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	for _, c := range rows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.process(c)
		}()
	}
	wg.Wait()
	return len(rows), nil
}

func (w *Worker) claimAndStart(n int) (int, error) {
	rows, err := w.claim(w.runCtx, n)
	if err != nil {
		return 0, err
	}
	for _, c := range rows {
		w.slots <- struct{}{}
		w.inflight.Add(1)
		go func() {
			defer func() {
				<-w.slots
				w.inflight.Done()
				if w.backlog.Load() {
					w.signal.Notify()
				}
			}()
			w.process(c)
		}()
	}
	return len(rows), nil
}

// claimed is a delivery row this worker holds the lease of.
type claimed struct {
	TenantID  int64  `gorm:"column:tenant_id"`
	ID        string `gorm:"column:id"`
	WebhookID int64  `gorm:"column:webhook_id"`
	EventID   string `gorm:"column:event_id"`
	Attempts  int    `gorm:"column:attempts"`
}

// The claim queries span tenants on purpose: workers serve every tenant, and
// every later statement names the row's tenant_id explicitly.
const claimPostgres = `WITH due AS (
  SELECT tenant_id, id FROM deliveries
  WHERE status IN ('pending', 'delivering') AND next_attempt_at <= @now
    AND (status = 'pending' OR lease_expires_at < @now)
  ORDER BY next_attempt_at
  LIMIT @n
  FOR UPDATE SKIP LOCKED)
UPDATE deliveries d SET status = 'delivering', lease_owner = @owner, lease_expires_at = @lease, updated_at = @now
FROM due WHERE d.tenant_id = due.tenant_id AND d.id = due.id
RETURNING d.tenant_id, d.id, d.webhook_id, d.event_id, d.attempts`

const claimSQLite = `UPDATE deliveries SET status = 'delivering', lease_owner = @owner, lease_expires_at = @lease, updated_at = @now
WHERE (tenant_id, id) IN (
  SELECT tenant_id, id FROM deliveries
  WHERE status IN ('pending', 'delivering') AND next_attempt_at <= @now
    AND (status = 'pending' OR lease_expires_at < @now)
  ORDER BY next_attempt_at
  LIMIT @n)
RETURNING tenant_id, id, webhook_id, event_id, attempts`

func (w *Worker) claim(ctx context.Context, n int) ([]claimed, error) {
	now := w.clock()
	q := claimSQLite
	if w.db.Dialect == db.Postgres {
		q = claimPostgres
	}
	args := map[string]any{"now": now, "n": n, "owner": w.owner, "lease": now.Add(w.lease)}
	// One statement is one transaction: on PostgreSQL the CTE's row locks
	// (SKIP LOCKED) and the UPDATE commit together; on SQLite the statement
	// runs under the database write lock. An explicit transaction would only
	// add round trips.
	var rows []claimed
	if err := w.db.WithContext(ctx).Raw(q, args).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("delivery: claim: %w", err)
	}
	return rows, nil
}

// job is everything one attempt needs, loaded after the claim.
type job struct {
	registry.Webhook
	OwnerExists bool       `gorm:"column:owner_exists"`
	Kind        string     `gorm:"column:kind"`
	Payload     string     `gorm:"column:payload"`
	OccurredAt  time.Time  `gorm:"column:occurred_at"`
	ExpiresAt   *time.Time `gorm:"column:expires_at"`
}

const loadJob = `SELECT w.*, EXISTS (SELECT 1 FROM users u WHERE u.tenant_id = w.tenant_id AND u.id = w.created_by_user_id) AS owner_exists,
  e.kind, e.payload, e.occurred_at, e.expires_at
FROM deliveries d
JOIN webhooks w ON w.tenant_id = d.tenant_id AND w.id = d.webhook_id
JOIN events e ON e.tenant_id = d.tenant_id AND e.id = d.event_id
WHERE d.tenant_id = ? AND d.id = ? AND d.lease_owner = ?`

// envelope is the delivery body (DESIGN section 5). data is the stored
// payload verbatim.
type envelope struct {
	ID         string          `json:"id"`
	Event      string          `json:"event"`
	OccurredAt time.Time       `json:"occurred_at"`
	Data       json.RawMessage `json:"data"`
}

func (w *Worker) process(c claimed) {
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
	var jobs []job
	if err := w.db.WithContext(w.runCtx).Raw(loadJob, c.TenantID, c.ID, w.owner).Scan(&jobs).Error; err != nil {
		if w.runCtx.Err() == nil {
			log.Error("load delivery", "err", err)
		}
		return // the lease expires and the row is tried again
	}
	if len(jobs) == 0 {
		return // deleted with its registration meanwhile
	}
	j := &jobs[0]
	now := w.clock()

	// Eligibility is re-checked at every attempt (spec section 6): the
	// registration may have been deactivated, its user removed, or its
	// target changed since the event was written.
	if reason := w.ineligible(j); reason != "" {
		res.Outcome, res.Error = Cancelled, reason
		w.finish(log, c, &res, map[string]any{"status": "cancelled", "last_error": reason, "next_attempt_at": nil}, nil)
		return
	}
	if j.ExpiresAt != nil && !now.Before(*j.ExpiresAt) {
		res.Outcome, res.Error = Failed, "event expired before it could be delivered"
		w.finish(log, c, &res, map[string]any{"status": "failed", "last_error": res.Error, "next_attempt_at": nil}, nil)
		return
	}
	secrets, err := registry.OpenSecrets(w.box, &j.Webhook, now)
	if err != nil {
		// A replica with the wrong FINSVC_SECRET must not fail deliveries
		// that a correctly configured one can make: put the row back for
		// later without counting an attempt.
		log.Error("open signing secret; is FINSVC_SECRET the same on every replica?", "err", err) // never the secret itself
		res.Outcome, res.Error = Released, "signing secret unavailable on this replica"
		w.finish(log, c, &res, map[string]any{"status": "pending", "next_attempt_at": now.Add(secretRetry), "last_error": res.Error}, nil)
		return
	}
	body, err := json.Marshal(envelope{ID: c.EventID, Event: j.Kind, OccurredAt: j.OccurredAt.UTC(), Data: json.RawMessage(j.Payload)})
	if err != nil {
		res.Outcome, res.Error = Failed, "stored payload is not valid JSON"
		log.Error("build envelope", "err", err)
		w.finish(log, c, &res, map[string]any{"status": "failed", "last_error": res.Error, "next_attempt_at": nil}, nil)
		return
	}

	// The attempt must end well within the lease so that nobody else can
	// claim the row while it is still in flight.
	actx, cancel := context.WithTimeout(w.attemptCtx, w.lease-leaseMargin/3)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, j.Target, bytes.NewReader(body))
	if err != nil {
		res.Outcome, res.Error = Failed, "invalid target URL"
		w.finish(log, c, &res, map[string]any{"status": "failed", "last_error": res.Error, "next_attempt_at": nil}, nil)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "finsvc-webhooks/1.0")
	sign.Sign(secrets, c.EventID, now, body).Apply(req.Header)

	start := time.Now()
	resp, err := w.client.Do(req)
	var status int
	var retryAfter, excerpt string
	if err == nil {
		status = resp.StatusCode
		retryAfter = resp.Header.Get("Retry-After")
		excerpt, _ = httpclient.ReadCapped(resp, httpclient.ExcerptLimit)
	}
	res.Duration = time.Since(start)
	res.StatusCode = status

	switch {
	case w.runCtx.Err() != nil:
		return // abrupt stop: record nothing, the lease expires
	case err != nil && w.releasing.Load() && w.attemptCtx.Err() != nil:
		res.Outcome = Released
		w.finish(log, c, &res, map[string]any{"status": "pending", "next_attempt_at": w.clock()}, nil)
		return
	}

	now = w.clock()
	set := map[string]any{
		"attempts": c.Attempts + 1, "last_attempt_at": now,
		"last_status_code": nil, "response_excerpt": nil, "last_error": nil,
	}
	if err == nil {
		set["last_status_code"] = status
		set["response_excerpt"] = excerpt
	}
	var extra func(tx *gorm.DB) error
	switch retry.Classify(status, err) {
	case retry.Success:
		res.Outcome = Succeeded
		set["status"], set["next_attempt_at"] = "succeeded", nil
	case retry.Blocked:
		res.Outcome, res.Error = Failed, httpclient.Describe(err)
		set["status"], set["next_attempt_at"], set["last_error"] = "failed", nil, res.Error
	case retry.Disable:
		res.Outcome, res.Error = Disabled, "target answered 410 Gone; registration disabled"
		set["status"], set["next_attempt_at"], set["last_error"] = "failed", nil, res.Error
		extra = func(tx *gorm.DB) error { return disable(tx, c, now) }
	default:
		if err != nil {
			res.Error = httpclient.Describe(err)
		} else {
			res.Error = fmt.Sprintf("target answered %d", status)
		}
		set["last_error"] = res.Error
		next, ok := retry.NextAfterResponse(c.Attempts+1, status, retryAfter, now, w.rnd)
		switch {
		case !ok:
			res.Outcome = Failed
			set["status"], set["next_attempt_at"] = "failed", nil
			set["last_error"] = res.Error + "; attempts exhausted"
		case j.ExpiresAt != nil && !next.Before(*j.ExpiresAt):
			res.Outcome = Failed
			set["status"], set["next_attempt_at"] = "failed", nil
			set["last_error"] = res.Error + "; retries stopped at the event's expires_at"
		default:
			res.Outcome = Retrying
			set["status"], set["next_attempt_at"] = "pending", next
		}
	}
	w.finish(log, c, &res, set, extra)
}

func (w *Worker) ineligible(j *job) string {
	switch {
	case !j.Active:
		return "registration is inactive"
	case !j.OwnerExists:
		return "the registering user no longer has access"
	case !(strings.HasPrefix(j.Target, "https://") || w.allowHTTP && strings.HasPrefix(j.Target, "http://")):
		return "target is not https"
	}
	return ""
}

// disable deactivates the registration after a 410 and cancels its other
// pending deliveries.
func disable(tx *gorm.DB, c claimed, now time.Time) error {
	reason := "target answered 410 Gone"
	if err := tx.Table("webhooks").Where("tenant_id = ? AND id = ?", c.TenantID, c.WebhookID).
		Updates(map[string]any{"active": false, "disabled_reason": reason, "updated_at": now}).Error; err != nil {
		return err
	}
	return tx.Table("deliveries").
		Where("tenant_id = ? AND webhook_id = ? AND status = 'pending' AND id <> ?", c.TenantID, c.WebhookID, c.ID).
		Updates(map[string]any{"status": "cancelled", "next_attempt_at": nil, "last_error": "registration disabled: " + reason, "updated_at": now}).Error
}

// finish writes the outcome, conditional on still holding the lease.
func (w *Worker) finish(log *slog.Logger, c claimed, res *Result, set map[string]any, extra func(*gorm.DB) error) {
	set["lease_owner"], set["lease_expires_at"], set["updated_at"] = nil, nil, w.clock()
	// The attempt happened; record it even when Stop's grace period has
	// just run out, but not after an abrupt stop.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.runCtx), releaseTimeout)
	defer cancel()
	write := func(tx *gorm.DB) error {
		r := tx.Table("deliveries").
			Where("tenant_id = ? AND id = ? AND lease_owner = ? AND status = 'delivering'", c.TenantID, c.ID, w.owner).
			Updates(set)
		if r.Error != nil {
			return r.Error
		}
		if r.RowsAffected == 0 {
			res.Outcome = LeaseLost
			return nil
		}
		if extra != nil {
			return extra(tx)
		}
		return nil
	}
	var err error
	if extra == nil {
		err = write(w.db.WithContext(ctx)) // a single statement needs no transaction
	} else {
		err = w.db.Tx(ctx, write)
	}
	if err != nil {
		log.Error("record delivery outcome", "err", err)
		return
	}
	switch res.Outcome {
	case LeaseLost:
		log.Warn("lease lost before the outcome was recorded")
	case Succeeded:
		log.Debug("delivered", "status", res.StatusCode, "duration", res.Duration)
	default:
		log.Info("delivery attempt", "outcome", string(res.Outcome), "status", res.StatusCode, "error", res.Error)
	}
}

// Depth reports the outbox depth for metrics: deliveries waiting for an
// attempt (pending) and in flight (delivering), across tenants.
func Depth(ctx context.Context, d *db.DB) (pending, delivering int64, err error) {
	var rows []struct {
		Status string
		N      int64
	}
	err = d.WithContext(ctx).Table("deliveries").Select("status, COUNT(*) AS n").
		Where("status IN ('pending', 'delivering')").Group("status").Scan(&rows).Error
	if err != nil {
		return 0, 0, fmt.Errorf("delivery: outbox depth: %w", err)
	}
	for _, r := range rows {
		if r.Status == "pending" {
			pending = r.N
		} else {
			delivering = r.N
		}
	}
	return pending, delivering, nil
}
