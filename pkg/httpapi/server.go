// Package httpapi assembles the HTTP server: the middleware chain, request
// validation against the embedded OpenAPI document, the strict handlers, and
// the one place where domain errors become HTTP statuses (errors.go).
//
// The chain, outermost first:
//
//	request id → access log → recover → body limit → tenant (from Host)
//	  → [/api/1.0 only] bearer auth → text check (NUL, UTF-8) → OpenAPI
//	    request validation → handler
//
// Operational endpoints (/healthz, /readyz, /openapi.yaml, …) answer on any
// host and skip tenant resolution so that load balancers can probe them.
package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/pkg/auth"
	"github.com/finsvc/finsvc/pkg/config"
	"github.com/finsvc/finsvc/pkg/db"
	"github.com/finsvc/finsvc/pkg/outbox"
	"github.com/finsvc/finsvc/pkg/tenant"
	"github.com/finsvc/finsvc/pkg/webhooks/secretbox"
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

// Deps is everything the HTTP layer needs; cmd/finsvc and the test harness
// wire it.
type Deps struct {
	DB      *db.DB
	Config  *config.Config
	Logger  *slog.Logger
	Tenants TenantResolver
	Auth    Authenticator

	// Outbox records webhook events in business transactions (acts, fetch
	// requests). Nil means one built from Config (WebhookAllowPrivate).
	Outbox *outbox.Outbox
	// Now is the clock of the acts and fetch flow (tests inject one to
	// expire fetch requests). Nil means time.Now.
	Now func() time.Time

	// Routes lets capabilities outside this package (the OAuth endpoints and
	// pages, …) register their own routes on the tenant-scoped echo instance.
	Routes []func(e *echo.Echo)
	// Middleware is inserted after tenant resolution for every tenant route
	// (rate limiting, metrics).
	Middleware []echo.MiddlewareFunc

	// WebhookNotifier wakes the delivery workers when a redelivery is queued
	// (delivery.Worker.Notifier()); nil means they find it on their next poll.
	WebhookNotifier outbox.Notifier
}

// Handlers implements apiserver.StrictServerInterface, one file per capability
// (clients.go, acts.go, actdata.go, webhooks.go, …). The assertion below
// keeps the set complete: an operation added to the spec without a handler
// fails the build.
type Handlers struct {
	deps Deps
	box  *secretbox.Box // seals webhook signing secrets
}

var _ apiserver.StrictServerInterface = (*Handlers)(nil)

// operational paths answer on any host, without a tenant.
var operational = map[string]bool{
	"/healthz": true, "/readyz": true, "/openapi.yaml": true, "/metrics": true, "/docs": true,
}

func isOperational(c echo.Context) bool {
	p := c.Request().URL.Path
	return operational[p] || strings.HasPrefix(p, "/docs/assets/")
}

func isAPI(c echo.Context) bool { return strings.HasPrefix(c.Request().URL.Path, "/api/1.0/") }

// New builds the service's HTTP handler.
func New(deps Deps) (http.Handler, error) {
	e, err := NewEcho(deps)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// NewEcho builds the echo instance behind New (exposed for tests and for
// cmd/finsvc, which may add routes such as /metrics).
func NewEcho(deps Deps) (*echo.Echo, error) {
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Config == nil {
		deps.Config = config.Default()
	}
	// Webhook signing secrets are sealed under a key derived from the global
	// secret: without it those operations could only fail per request, so
	// refuse to start instead (serve and demo resolve it before this). The box
	// is derived once here and shared by the webhook handlers.
	box, err := secretbox.New(deps.Config.Secret)
	if err != nil {
		return nil, fmt.Errorf("httpapi: the global secret is not resolved (FINSVC_SECRET): %w", err)
	}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = errorHandler(deps.Logger)

	e.Use(requestID())
	e.Use(accessLog(deps.Logger))
	e.Use(recoverer(deps.Logger))
	e.Use(bodyLimit(deps.Config.BodyLimit))
	e.Use(resolveTenant(deps))
	for _, m := range deps.Middleware {
		e.Use(m)
	}

	validator, err := requestValidator()
	if err != nil {
		return nil, err
	}
	h := &Handlers{deps: deps, box: box}
	strict := apiserver.NewStrictHandler(h, nil)
	apiGroup := e.Group("", bearerAuth(deps.Auth), textGuard, validator)
	apiserver.RegisterHandlers(apiGroup, strict)

	registerOperational(e, deps)
	for _, r := range deps.Routes {
		r(e)
	}
	return e, nil
}
