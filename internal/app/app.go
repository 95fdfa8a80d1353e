// Package app is the composition root: the one place that builds the
// service from its configuration. It opens the database (unless given one),
// builds every store and service once, hands them to the HTTP layer
// (httpapi.Deps) and owns every goroutine and connection that lives beside
// the requests: the webhook delivery worker, the OAuth janitor, the
// retention purger, SQLite's statistics refresh, the bearer token cache's
// LISTEN connection and the rate limiter's Redis client.
//
//	a, err := app.New(cfg, app.WithLogger(logger))
//	defer a.Close()
//	a.Start(ctx)
//	srv.Serve(ctx, a.Handler())
//
// cmd/finsvc (serve, demo), the benchmarks (bench/) and the test harness
// (internal/apitest) all start here, so what they run and measure is what
// production runs. Tests replace parts through Options, each one a named
// field (a test authenticator, a clock, a database); there are no hooks
// whose order matters.
//
// Why here and not in httpapi: the HTTP layer translates requests and must
// not know how a service is made (nor own a goroutine); the domain packages
// must not know about each other's wiring. Both stay testable on their own
// because this package is the only one that knows the whole graph.
package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/contrib/instrumentation/github.com/labstack/echo/otelecho"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/finsvc/finsvc/internal/acts"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/authcache"
	"github.com/finsvc/finsvc/internal/authspec"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/console"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/docs"
	"github.com/finsvc/finsvc/internal/httpapi"
	"github.com/finsvc/finsvc/internal/idempotency"
	"github.com/finsvc/finsvc/internal/janitor"
	"github.com/finsvc/finsvc/internal/metrics"
	"github.com/finsvc/finsvc/internal/mfa"
	"github.com/finsvc/finsvc/internal/oauth"
	"github.com/finsvc/finsvc/internal/ratelimit"
	"github.com/finsvc/finsvc/internal/retention"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/templates"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/tracing"
	"github.com/finsvc/finsvc/internal/users"
	"github.com/finsvc/finsvc/internal/web"
	"github.com/finsvc/finsvc/internal/webhooks"
	"github.com/finsvc/finsvc/internal/webhooks/delivery"
	"github.com/finsvc/finsvc/internal/webhooks/notices"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/openapi"
)

// Token cache settings: entries live at most TokenCacheTTL (revocation is
// immediate through PostgreSQL notifications; the TTL only bounds what a
// silently lost listener could miss).
const (
	TokenCacheTTL  = 10 * time.Second
	TokenCacheSize = 100_000
)

// Option replaces one part the App would otherwise build.
type Option func(*options)

type options struct {
	hashParams   *users.HashParams
	db           *db.DB
	logger       *slog.Logger
	auth         httpapi.Authenticator
	tenants      httpapi.TenantResolver
	now          db.Clock
	limiter      *ratelimit.Limiter
	deliveryOpts []delivery.Option
	noDeliveries bool
	docsServer   string
	tracer       trace.TracerProvider
	// idempotencyFault runs inside a keyed POST's transaction, before its
	// commit (fault tests).
	idempotencyFault func(context.Context)
}

// WithTracerProvider traces with tp instead of what the OTEL_* variables
// describe (tests pass an SDK provider over an in-memory exporter); the
// caller shuts it down. It also instruments the database handle, which a
// WithDB caller shares.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracer = tp }
}

// WithDocsServerURL makes /docs document url as the server (the demo passes
// its tenant's URL) instead of the tenant URL template.
func WithDocsServerURL(url string) Option { return func(o *options) { o.docsServer = url } }

// WithDB serves d instead of opening cfg's database; Close leaves it open.
// d must be migrated.
func WithDB(d *db.DB) Option { return func(o *options) { o.db = d } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithAuthenticator checks bearer tokens with a instead of the OAuth
// service (whose endpoints and pages are still served). The token cache and
// the token-check counter wrap it as they wrap the real one.
func WithAuthenticator(a httpapi.Authenticator) Option { return func(o *options) { o.auth = a } }

// WithTenants resolves tenants with r instead of a cached tenant.Store.
func WithTenants(r httpapi.TenantResolver) Option { return func(o *options) { o.tenants = r } }

// WithClock is the clock of the act aggregate (tests expire fetch requests
// with it).
func WithClock(now db.Clock) Option { return func(o *options) { o.now = now } }

// WithLimiter uses l instead of the limiter cfg describes; the caller
// closes it.
func WithLimiter(l *ratelimit.Limiter) Option { return func(o *options) { o.limiter = l } }

// WithDeliveryOptions adjusts the webhook delivery worker (TLS roots, poll
// interval, …).
func WithDeliveryOptions(opts ...delivery.Option) Option {
	return func(o *options) { o.deliveryOpts = append(o.deliveryOpts, opts...) }
}

// WithIdempotencyFault runs fn inside every keyed POST's transaction, after
// its effects and its key are written and before the commit: fault tests
// kill the process there.
func WithIdempotencyFault(fn func(context.Context)) Option {
	return func(o *options) { o.idempotencyFault = fn }
}

// WithoutDeliveries makes Start run no delivery worker, so that deliveries
// stay pending (the load benchmark measures the request path alone).
func WithoutDeliveries() Option { return func(o *options) { o.noDeliveries = true } }

// WithPasswordHashing sets the argon2id cost of new password hashes
// (default users.DefaultHashParams); test harnesses pass a cheap one.
func WithPasswordHashing(p users.HashParams) Option {
	return func(o *options) { o.hashParams = &p }
}

// App is the assembled service.
type App struct {
	cfg   *config.Config
	log   *slog.Logger
	db    *db.DB
	oauth *oauth.Service
	// mfaStore is the second factor's store (MFA).
	mfaStore *mfa.Store
	metrics  *metrics.Metrics
	handler  http.Handler
	// services are the domain stores, built once (Services).
	services httpapi.Services

	worker    *delivery.Worker // started by Start; nil WithoutDeliveries
	janitor   *oauth.Janitor
	retention *retention.Purger
	stats     *janitor.Statistics // SQLite's planner statistics
	cache     *authcache.Cache    // nil unless PostgreSQL with a database URL
	notices   *notices.Notices    // nil without FINSVC_SMTP_URL (buildNotices)

	// closers release what New opened, in reverse order.
	closers []func() error

	mu       sync.Mutex
	started  bool
	stopped  bool
	stopFns  []func()
	stopOnce sync.Once
	closeOne sync.Once
	closeErr error
}

// New builds the service from cfg. Without WithDB it opens cfg's database
// and migrates it (unless cfg.NoMigrate). It resolves the global secret
// (config.ResolveSecret): webhook secrets, OAuth tokens and CSRF keys derive
// from it. Nothing runs in the background until Start.
func New(cfg *config.Config, opts ...Option) (_ *App, err error) {
	var o options
	for _, fn := range opts {
		fn(&o)
	}
	a := &App{cfg: cfg, log: o.logger}
	if a.log == nil {
		a.log = slog.Default()
	}
	defer func() {
		if err != nil {
			_ = a.Close()
		}
	}()
	b := &assembly{o: &o}
	// In this order: tracing first, so that its shutdown, which flushes the
	// last spans, is the last closer to run; the database before everything
	// that stores; the policy before everything that asks it.
	for _, step := range []func(*assembly) error{
		a.openTracing, a.openDatabase, a.traceRequests, a.buildUsers, a.buildLimiter,
		a.readPolicy, a.buildOAuth, a.buildJobs, a.buildWebhooks, a.buildNotices, a.buildAuthenticator,
		a.buildServices, a.buildHandler,
	} {
		if err := step(b); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// assembly is what New's steps hand on to the later ones.
type assembly struct {
	o             *options
	tp            trace.TracerProvider // nil: tracing off
	traceRequests echo.MiddlewareFunc
	middleware    []echo.MiddlewareFunc
	users         *users.Store
	limiter       *ratelimit.Limiter
	spec          *openapi3.T
	policy        *auth.Policy
	nav           web.Nav
	webhooks      *webhooks.Service
	authn         httpapi.Authenticator
	tenants       httpapi.TenantResolver
	console       *console.Console
	mfa           *mfa.Store
}

// openTracing sets up tracing from the environment unless a tracer
// provider was given.
func (a *App) openTracing(b *assembly) error {
	b.tp = b.o.tracer
	if b.tp != nil {
		return nil
	}
	tp, shutdown, err := tracing.FromEnv(context.Background(), a.log)
	if err != nil {
		return err
	}
	b.tp = tp
	a.closers = append(a.closers, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownGrace)
		defer cancel()
		return shutdown(ctx)
	})
	return nil
}

// openDatabase opens (and migrates) the database unless one was given, and
// resolves the global secret.
func (a *App) openDatabase(b *assembly) error {
	a.db = b.o.db
	if a.db == nil {
		var err error
		if a.db, err = OpenDB(context.Background(), a.cfg, a.log); err != nil {
			return err
		}
		a.closers = append(a.closers, a.db.Close)
	}
	generated, err := a.cfg.ResolveSecret(a.db.Dialect)
	if err != nil {
		return err
	}
	if generated {
		a.log.Warn("generated a new secret; keep it with the data", "path", filepath.Join(a.cfg.DataDir, config.SecretFile))
	}
	return nil
}

// traceRequests instruments the log, the database and the requests when
// tracing is on. Off (tp nil): no callbacks, no middleware, nothing on the
// hot path.
func (a *App) traceRequests(b *assembly) error {
	if b.tp == nil {
		return nil
	}
	// Lines written inside a traced request or delivery carry its ids
	// (off, no context holds a span: nothing to add).
	a.log = slog.New(tracing.LogHandler(a.log.Handler()))
	if err := tracing.InstrumentDB(a.db.DB, b.tp); err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	props, err := tracing.Propagators()
	if err != nil {
		return err
	}
	b.traceRequests = otelecho.Middleware("",
		otelecho.WithTracerProvider(b.tp),
		otelecho.WithPropagators(props),
		otelecho.WithSkipper(isProbe))
	b.middleware = append(b.middleware, tenantOnSpan)
	return nil
}

// buildUsers builds the user store. Deactivating a user revokes its tokens
// in the OAuth store, which is built later with the user store (sign-in
// needs it).
func (a *App) buildUsers(b *assembly) error {
	var userOpts []users.Option
	if b.o.hashParams != nil {
		userOpts = append(userOpts, users.WithHashParams(*b.o.hashParams))
	}
	userOpts = append(userOpts, users.WithRevoker(users.RevokerFunc(func(ctx context.Context, id int64) error {
		return a.oauth.Store().RevokeUser(ctx, id)
	})), users.WithSessionEnder(func(ctx context.Context, id int64) error {
		return a.oauth.Store().RevokeSessions(ctx, id, "")
	}))
	b.users = users.NewStore(a.db, userOpts...)
	return nil
}

// buildLimiter builds the rate limiter cfg describes unless one was given.
func (a *App) buildLimiter(b *assembly) error {
	b.limiter = b.o.limiter
	if b.limiter != nil {
		return nil
	}
	l, err := ratelimit.New(a.cfg, a.log, ratelimit.WithObserver(metrics.RateLimited, metrics.RateLimitFallback))
	if err != nil {
		return err
	}
	b.limiter = l
	a.closers = append(a.closers, l.Close)
	return nil
}

// readPolicy reads the spec once for what the composition root derives
// from it: the operation policy (the API's authorizer, the console, the
// developer pages and the webhook registry all ask it; an operation
// without a declaration refuses the start) and, later, the console's event
// catalog.
func (a *App) readPolicy(b *assembly) error {
	spec, err := openapi.Shared()
	if err != nil {
		return err
	}
	b.spec = spec
	b.policy, err = authspec.FromSpec(spec)
	return err
}

// buildOAuth builds the OAuth service with the navigation: each adapter's
// entries, declared beside its routes.
func (a *App) buildOAuth(b *assembly) error {
	b.nav = slices.Concat(console.Nav, oauth.Nav)
	var err error
	if b.mfa, err = a.buildMFA(b); err != nil {
		return err
	}
	a.mfaStore = b.mfa
	a.oauth, err = oauth.New(a.db, a.cfg, a.log, b.users, oauth.WithBudget(b.limiter), oauth.WithPolicy(b.policy), oauth.WithNav(b.nav),
		oauth.WithMFA(b.mfa))
	return err
}

// buildMFA builds the second-factor store: TOTP secrets sealed under a
// key of their own, recovery codes hashed by the user store.
func (a *App) buildMFA(b *assembly) (*mfa.Store, error) {
	ring, err := a.cfg.Ring()
	if err != nil {
		return nil, fmt.Errorf("app: the key ring is not resolved (FINSVC_SECRET): %w", err)
	}
	box, err := sealing.NewFor(ring, mfa.SealPurpose)
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	var opts []mfa.Option
	if b.o.now != nil {
		opts = append(opts, mfa.WithClock(b.o.now))
	}
	return mfa.New(a.db, box, b.users, "finsvc", opts...)
}

// MFA is the second-factor store (the CLI's reset-mfa, tests).
func (a *App) MFA() *mfa.Store { return a.mfaStore }

// buildJobs builds the background jobs Start runs, and the metrics.
func (a *App) buildJobs(*assembly) error {
	a.janitor = oauth.NewJanitor(a.db, a.log)
	a.retention = retention.New(a.db, a.cfg.EventRetention, a.log)
	a.retention.AuditRetention = a.cfg.AuditRetention
	a.stats = janitor.NewStatistics(a.db, a.log)
	a.metrics = metrics.New(a.db)
	return nil
}

// buildNotices builds the webhook failure notices by email when
// FINSVC_SMTP_URL names a mail server, and says once that none are sent
// when it does not.
func (a *App) buildNotices(*assembly) error {
	if a.cfg.SMTPURL == "" {
		a.log.Info("FINSVC_SMTP_URL is not set: webhook failure notices are not sent by email")
		return nil
	}
	m, err := notices.NewSMTP(a.cfg.SMTPURL)
	if err != nil {
		return err
	}
	a.notices = notices.New(a.db, m, a.consoleURL, a.log)
	return nil
}

// consoleURL is the address of a tenant's webhook page, for the notices.
func (a *App) consoleURL(slug string, id int64) string {
	return fmt.Sprintf("https://%s.%s/console/webhooks/%d", slug, a.cfg.BaseDomain, id)
}

// buildWebhooks builds the webhook context: events written by acts, fetch
// requests and redeliveries wake this replica's worker at once (if Start
// runs it; otherwise they wait, pending).
func (a *App) buildWebhooks(b *assembly) error {
	dopts := []delivery.Option{delivery.WithObserver(metrics.DeliveryOutcome)}
	if b.tp != nil {
		dopts = append(dopts, delivery.WithTracerProvider(b.tp))
	}
	wh, err := webhooks.New(a.db, a.cfg, a.log, b.policy, append(dopts, b.o.deliveryOpts...)...)
	if err != nil {
		return err
	}
	if b.tp != nil {
		wh.Outbox.Tracer = b.tp.Tracer(outbox.TracerName)
	}
	if !b.o.noDeliveries {
		a.worker = wh.Worker
	}
	b.webhooks = wh
	return nil
}

// buildAuthenticator builds the bearer check: the OAuth service's (or the
// one given), behind the token cache where it can serve, counted.
func (a *App) buildAuthenticator(b *assembly) error {
	var authn httpapi.Authenticator = a.oauth
	if b.o.auth != nil {
		authn = b.o.auth
	}
	// The cache serves only while its LISTEN connection is up, which needs
	// PostgreSQL; on SQLite every check goes to the database.
	if a.db.Dialect == db.Postgres && a.cfg.DatabaseURL != "" {
		a.cache = authcache.New(authn, TokenCacheTTL, TokenCacheSize)
		authn = a.cache
	}
	b.authn = metrics.Authenticator(authn)
	return nil
}

// buildServices builds the domain stores the API and the console share,
// and the console, which calls them with the sign-in pages' sessions.
func (a *App) buildServices(b *assembly) error {
	b.tenants = b.o.tenants
	if b.tenants == nil {
		b.tenants = tenant.NewStore(a.db)
	}
	clientStore, templateStore := clients.NewStore(a.db), templates.NewStore(a.db)
	clientStore.Outbox = b.webhooks.Outbox
	a.services = httpapi.Services{
		Clients:   clientStore,
		Templates: templateStore,
		Users:     b.users,
		Acts: &acts.Store{DB: a.db, Outbox: b.webhooks.Outbox, Clients: clientStore, Templates: templateStore,
			Window: a.cfg.FetchWindow, Clock: b.o.now},
		Webhooks: b.webhooks.Registry,
		Audit:    audit.NewLog(a.db),
	}
	eventTypes, err := consoleEventTypes(b.spec)
	if err != nil {
		return err
	}
	s := a.services
	b.console, err = console.New(console.Deps{Sessions: a.oauth, Webhooks: s.Webhooks, Acts: s.Acts,
		Users: s.Users, Audit: s.Audit, Apps: a.oauth.Store(), Logger: a.log, Policy: b.policy, EventTypes: eventTypes, Nav: b.nav,
		MFA: b.mfa})
	return err
}

// buildHandler builds the HTTP handler: the API with its idempotency keys,
// and every adapter's routes.
func (a *App) buildHandler(b *assembly) error {
	// Stored responses may carry a secret shown once: sealed like the
	// webhook secrets, under a key of their own.
	ring, err := a.cfg.Ring()
	if err != nil {
		return fmt.Errorf("app: the key ring is not resolved (FINSVC_SECRET): %w", err)
	}
	keyBox, err := sealing.NewFor(ring, idempotency.SealPurpose)
	if err != nil {
		return fmt.Errorf("app: %w", err)
	}
	keys := idempotency.New(a.db, keyBox, b.o.now)
	keys.BeforeCommit(b.o.idempotencyFault)
	docsServer := b.o.docsServer
	a.handler, err = httpapi.New(httpapi.Deps{
		Config:   a.cfg,
		Logger:   a.log,
		DB:       a.db,
		Tenants:  b.tenants,
		Auth:     b.authn,
		Services: a.services,
		Policy:   b.policy,
		// Only an authenticated caller spends its tenant's budget; the
		// bearer check and the token endpoints charge it.
		Budget:      b.limiter,
		Idempotency: keys,
		Trace:       b.traceRequests,
		Middleware:  append(b.middleware, a.metrics.Middleware(httpapi.Status)),
		Routes: []func(*echo.Echo){a.oauth.Routes, b.console.Routes, web.Routes, a.metrics.Register,
			func(e *echo.Echo) { docs.Register(e, docsServer) }},
	})
	return err
}

// OpenDB opens the serving pool on FINSVC_DATABASE_URL and migrates. What
// needs a session of its own (the migration advisory lock, and LISTEN in
// Start) goes to FINSVC_DATABASE_DIRECT_URL when it is set: behind a
// transaction pooler such as PgBouncer, session state does not survive a
// transaction. A direct URL that does not answer refuses the start.
func OpenDB(ctx context.Context, cfg *config.Config, log *slog.Logger) (*db.DB, error) {
	d, err := db.Open(ctx, cfg.DatabaseURL, cfg.DataDir, log, db.BehindPooler(cfg.BehindPooler()))
	if err != nil {
		return nil, err
	}
	if cfg.DatabaseDirectURL == "" || cfg.DatabaseDirectURL == cfg.DatabaseURL {
		if !cfg.NoMigrate {
			if err := d.Migrate(ctx); err != nil {
				d.Close()
				return nil, err
			}
		}
		return d, nil
	}
	direct, err := db.Open(ctx, cfg.DatabaseDirectURL, "", log)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("FINSVC_DATABASE_DIRECT_URL: %w", err)
	}
	defer direct.Close()
	if !cfg.NoMigrate {
		if err := direct.Migrate(ctx); err != nil {
			d.Close()
			return nil, err
		}
	}
	return d, nil
}

// isProbe: load balancers' and Prometheus' polls are not traced (they
// would outnumber the requests worth a trace).
func isProbe(c echo.Context) bool {
	switch c.Request().URL.Path {
	case "/healthz", "/readyz", "/metrics":
		return true
	}
	return false
}

// tenantOnSpan names the request's tenant (its slug, never its data) on
// the server span.
func tenantOnSpan(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		if t, ok := tenant.FromContext(ctx); ok {
			trace.SpanFromContext(ctx).SetAttributes(attribute.String("finsvc.tenant", t.Slug))
		}
		return next(c)
	}
}

// Handler is the HTTP handler of the whole service (API, OAuth, operational
// endpoints). It serves before Start; only the background work waits for it.
func (a *App) Handler() http.Handler { return a.handler }

// DB is the database the App serves.
func (a *App) DB() *db.DB { return a.db }

// OAuth is the authorization server (tests, maintenance).
func (a *App) OAuth() *oauth.Service { return a.oauth }

// Services are the domain stores the App built, for commands that write
// through them beside the API (the demo seeder); nothing builds others.
func (a *App) Services() httpapi.Services { return a.services }

// Metrics is the Prometheus registry behind /metrics.
func (a *App) Metrics() *metrics.Metrics { return a.metrics }

// Start runs the background work: the webhook delivery worker (unless
// WithoutDeliveries), the OAuth janitor, the retention purger, SQLite's
// planner statistics (nothing on PostgreSQL) and the token cache's
// listener (PostgreSQL only). ctx carries values only: its
// cancellation does not stop them (it would abandon deliveries in flight);
// Stop or Close does, gracefully. Start may be called once.
func (a *App) Start(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.started || a.stopped {
		return errors.New("app: Start called twice or after Stop")
	}
	a.started = true
	bg := context.WithoutCancel(ctx)
	if a.worker != nil {
		if err := a.worker.Start(bg); err != nil {
			return fmt.Errorf("webhook deliveries: %w", err)
		}
		a.stopFns = append(a.stopFns, func() {
			sctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownGrace)
			defer cancel()
			_ = a.worker.Stop(sctx)
			a.log.Info("webhook deliveries stopped")
		})
	}
	a.janitor.Start(bg)
	a.stopFns = append(a.stopFns, a.janitor.Stop)
	a.retention.Start(bg)
	a.stopFns = append(a.stopFns, a.retention.Stop)
	a.stats.Start(bg) // nothing on PostgreSQL
	a.stopFns = append(a.stopFns, a.stats.Stop)
	if a.notices != nil {
		a.notices.Start(bg)
		a.stopFns = append(a.stopFns, a.notices.Stop)
	}
	if a.cache != nil {
		lctx, cancel := context.WithCancel(bg)
		done := make(chan struct{})
		go func() {
			defer close(done)
			a.cache.ListenPostgres(lctx, a.cfg.SessionDatabaseURL(), a.log)
		}()
		// Waiting for the listener to return closes its connection.
		a.stopFns = append(a.stopFns, func() { cancel(); <-done })
	}
	return nil
}

// Stop ends what Start began: deliveries in flight get cfg.ShutdownGrace to
// finish (the rest are released to other replicas), the janitor and the
// listener end. Connections stay open for requests still in flight. It is
// safe to call more than once, concurrently (server.OnShutdown and Close).
func (a *App) Stop() {
	a.stopOnce.Do(func() {
		a.mu.Lock()
		a.stopped = true
		fns := a.stopFns
		a.mu.Unlock()
		var wg sync.WaitGroup
		for _, f := range fns {
			wg.Go(f)
		}
		wg.Wait()
	})
}

// Close stops the background work (Stop) and closes every connection New
// opened: the limiter's Redis client and the database unless WithDB gave it.
// It is safe to call more than once.
func (a *App) Close() error {
	a.Stop()
	a.closeOne.Do(func() {
		var errs []error
		for i := len(a.closers) - 1; i >= 0; i-- {
			errs = append(errs, a.closers[i]())
		}
		a.closeErr = errors.Join(errs...)
	})
	return a.closeErr
}

// consoleEventTypes are the event kinds with the first sentence of their
// description, read from the spec's callbacks, for the console's create
// form.
func consoleEventTypes(spec *openapi3.T) ([]console.EventType, error) {
	events, err := openapi.Events(spec)
	if err != nil {
		return nil, err
	}
	out := make([]console.EventType, 0, len(events))
	for _, e := range events {
		d := strings.Join(strings.Fields(e.Operation.Description), " ")
		if i := strings.Index(d, ". "); i >= 0 {
			d = d[:i+1]
		}
		et := console.EventType{Name: e.Kind, Description: d}
		if et.Example, err = exampleData(e); err != nil {
			return nil, err
		}
		out = append(out, et)
	}
	return out, nil
}

// exampleData is the data object of the callback's example envelope (the
// first, by name), which the console's test of that event type sends; nil
// when the callback has none.
func exampleData(e openapi.Event) (json.RawMessage, error) {
	rb := e.Operation.RequestBody
	if rb == nil || rb.Value == nil {
		return nil, nil
	}
	mt := rb.Value.Content.Get("application/json")
	if mt == nil || len(mt.Examples) == 0 {
		return nil, nil
	}
	ex := mt.Examples[slices.Sorted(maps.Keys(mt.Examples))[0]]
	if ex == nil || ex.Value == nil {
		return nil, nil
	}
	env, ok := ex.Value.Value.(map[string]any)
	if !ok || env["data"] == nil {
		return nil, fmt.Errorf("app: the example of event %s has no data object", e.Kind)
	}
	return json.Marshal(env["data"])
}
