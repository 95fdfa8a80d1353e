// Package httpapi is the HTTP face of the service: the middleware chain,
// request validation against the embedded OpenAPI document, authorization
// from the same document (authorize.go), the strict handlers (one file per
// capability: clients.go, acts.go, actdata.go, webhooks.go, …) and the one
// place where domain errors become HTTP statuses (errors.go).
//
// The chain, outermost first:
//
//	[Deps.Trace: the server span, when tracing is on] → request id → access log → recover → body limit → tenant (from Host)
//	  → deprecation headers (deprecation.go) → Deps.Middleware (metrics)
//	  → [/api/1.0 only] bearer auth, charging the rate limits (Deps.Budget)
//	    → text check (NUL, UTF-8) → OpenAPI request validation
//	    → the key and body digest of a keyed POST (idempotency.go)
//	    → the strict middlewares, keyed by operation: authorization
//	      (authorize.go, the operation policy: scopes and role), then
//	      idempotency keys (replay, or run in the key's transaction)
//	  → handler
//
// Operational endpoints (/healthz, /readyz, /openapi.yaml, …) answer on any
// host and skip tenant resolution so that load balancers can probe them.
//
// This package builds nothing it serves: the stores and services arrive
// built (Deps.Services) from the composition root, internal/app, which also owns
// every connection and goroutine. Handlers translate between the wire and
// the domain and nothing else; they never check permissions themselves.
package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/acts"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/templates"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/users"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
)

// TenantResolver finds a tenant by its subdomain slug; apperr.NotFound when
// there is none.
type TenantResolver interface {
	BySlug(ctx context.Context, slug string) (*tenant.Tenant, error)
}

// Authenticator turns a bearer token into a principal of the tenant in ctx.
// It returns an apperr.Unauthenticated error for any token it does not accept
// (unknown, expired, revoked, not an access token, another tenant's).
type Authenticator interface {
	AuthenticateBearer(ctx context.Context, token string) (*auth.Principal, error)
}

// Services are the domain stores the handlers call, built once by internal/app
// and shared by every request (Acts is the whole act aggregate: acts, data
// points, fetch requests and their correlated writes).
type Services struct {
	Clients   *clients.Store
	Templates *templates.Store
	Users     *users.Store
	Acts      *acts.Store
	Webhooks  *registry.Store
	Audit     *audit.Log
}

// Deps is everything the HTTP layer needs, already built (internal/app assembles
// it; nothing here is derived or defaulted from anything else).
type Deps struct {
	Config   *config.Config
	Logger   *slog.Logger
	DB       *db.DB // the readiness probe pings it
	Tenants  TenantResolver
	Auth     Authenticator
	Services Services
	// Policy is the operation policy the authorization middleware
	// enforces (read from the spec by internal/app, authspec.FromSpec).
	Policy *auth.Policy
	// Budget charges requests to the rate limits (internal/ratelimit); nil
	// limits nothing.
	Budget Budget
	// Idempotency runs POSTs sent with an Idempotency-Key at most once
	// (internal/idempotency); nil ignores the header.
	Idempotency IdempotencyStore

	// Trace, when not nil, runs outermost, after routing (so that it can
	// name the span by the route): the server span of every request
	// (internal/app installs otelecho there only when tracing is on).
	Trace echo.MiddlewareFunc
	// Middleware runs, in order, after tenant resolution on every tenant
	// route and on the operational endpoints (internal/app passes the metrics).
	Middleware []echo.MiddlewareFunc
	// Routes registers what is served beside the JSON API on the same echo
	// instance: the OAuth endpoints and pages, /metrics, /docs.
	Routes []func(e *echo.Echo)
}

func (d *Deps) check() error {
	s := d.Services
	switch {
	case d.Config == nil || d.Logger == nil || d.Tenants == nil || d.Policy == nil:
		return errors.New("httpapi: Config, Logger, Tenants and Policy are required")
	case s.Clients == nil || s.Templates == nil || s.Users == nil || s.Acts == nil || s.Webhooks == nil:
		return errors.New("httpapi: every service is required (internal/app builds them)")
	}
	return nil
}

// Handlers implements apiserver.StrictServerInterface, one file per capability
// (clients.go, acts.go, actdata.go, webhooks.go, …). The assertion below
// keeps the set complete: an operation added to the spec without a handler
// fails the build (and one without a policy in the spec fails New).
type Handlers struct {
	svc  Services
	deps Deps
	// eventTypes is GET /event-types' answer, read from the spec once.
	eventTypes []models.EventType
}

var _ apiserver.StrictServerInterface = (*Handlers)(nil)

// operational paths answer on any host, without a tenant (and the pages'
// stylesheet under /assets/, so that an unknown host's page is styled).
var operational = map[string]bool{
	"/healthz": true, "/readyz": true, "/openapi.yaml": true, "/metrics": true, "/docs": true,
}

func isOperational(c echo.Context) bool {
	p := c.Request().URL.Path
	return operational[p] || strings.HasPrefix(p, "/docs/assets/") || strings.HasPrefix(p, "/assets/")
}

func isAPI(c echo.Context) bool { return strings.HasPrefix(c.Request().URL.Path, "/api/1.0/") }

// New builds the service's HTTP handler. It fails when a dependency is
// missing or when an operation of the server has no rule in Deps.Policy.
func New(deps Deps) (http.Handler, error) {
	if err := deps.check(); err != nil {
		return nil, err
	}
	// One read-only copy of the spec for everything derived from it at
	// start-up (the request validator loads its own: it adjusts bounds).
	spec, err := sharedSpec()
	if err != nil {
		return nil, err
	}
	authz, err := authorizer(deps.Policy)
	if err != nil {
		return nil, err
	}
	validator, err := requestValidator()
	if err != nil {
		return nil, err
	}
	deprecated, err := deprecation(spec)
	if err != nil {
		return nil, err
	}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = errorHandler(deps.Logger)

	if deps.Trace != nil {
		e.Use(deps.Trace)
	}
	e.Use(requestID())
	e.Use(auditRequest(deps.Config.TrustProxy))
	e.Use(accessLog(deps.Logger))
	e.Use(recoverer(deps.Logger))
	e.Use(bodyLimit(deps.Config.BodyLimit))
	e.Use(resolveTenant(deps))
	e.Use(deprecated)
	e.Use(noStore(spec))
	for _, m := range deps.Middleware {
		e.Use(m)
	}

	types, err := eventTypes(spec)
	if err != nil {
		return nil, err
	}
	h := &Handlers{svc: deps.Services, deps: deps, eventTypes: types}
	// The generated handler wraps the last middleware outermost: the
	// authorizer runs first, and the idempotency layer only for requests
	// it admitted.
	strict := apiserver.NewStrictHandler(h, []apiserver.StrictMiddlewareFunc{idempotent(deps.Idempotency), authz})
	budget := deps.Budget
	if budget == nil {
		budget = noBudget{}
	}
	apiGroup := e.Group("", bearerAuth(deps.Auth, budget), textGuard, validator, keyBody(deps.Idempotency != nil))
	apiserver.RegisterHandlers(apiGroup, strict)

	registerOperational(e, deps)
	for _, r := range deps.Routes {
		r(e)
	}
	return e, nil
}
