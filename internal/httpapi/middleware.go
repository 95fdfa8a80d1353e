package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/clientaddr"
	"github.com/finsvc/finsvc/internal/ratelimit"
	"github.com/finsvc/finsvc/internal/tenant"
)

// headerRequestID is the response header the spec names (section 5.8).
const headerRequestID = "request_id"

// requestIDKey is the header's key as net/http stores it: the middleware
// writes and reads the map directly, without canonicalizing per request.
var requestIDKey = http.CanonicalHeaderKey(headerRequestID)

// validRequestID reports whether id is 1 to 128 of [A-Za-z0-9._-].
func validRequestID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// requestID reuses a sane incoming X-Request-Id (so a proxy's id follows the
// request through our logs) or makes a new one, and sets it on the response
// before anything else can fail. The response header is also where
// RequestIDOf reads it.
func requestID() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			id := c.Request().Header.Get(echo.HeaderXRequestID)
			if !validRequestID(id) {
				var b [12]byte
				_, _ = rand.Read(b[:])
				id = hex.EncodeToString(b[:])
			}
			c.Response().Header()[requestIDKey] = []string{id}
			return next(c)
		}
	}
}

// auditRequest puts what the audit log records of a request (the client's
// address, its user agent, the request id) in the request's context, where
// the stores that record actions find it (audit.RequestFrom).
func auditRequest(trustProxy bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			c.SetRequest(req.WithContext(audit.WithRequest(req.Context(), audit.Request{
				Addr: clientaddr.From(req, trustProxy), UserAgent: req.UserAgent(), RequestID: RequestIDOf(c),
			})))
			return next(c)
		}
	}
}

// RequestIDOf returns the request id of c.
func RequestIDOf(c echo.Context) string {
	if v := c.Response().Header()[requestIDKey]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// accessLog writes one structured line per request: request id, tenant,
// route (the pattern, not the raw path, so ids and tokens in URLs never reach
// the log), status and latency. Query strings are never logged: OAuth
// redirects carry codes in them.
func accessLog(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			if err != nil {
				c.Error(err) // render now so the logged status is the real one
			}
			req := c.Request()
			ctx := req.Context()
			if !log.Enabled(ctx, slog.LevelInfo) {
				return nil
			}
			// A record built by hand with typed attributes: no boxing of each
			// value into an interface, and no program counter (LogAttrs
			// walks the stack for one; the access log has no use for the
			// source line). The line was ~7 % of the chain's CPU with the
			// []any form (BENCHMARKS.md, "Load").
			attrs := [9]slog.Attr{
				slog.String("request_id", RequestIDOf(c)),
				slog.String("method", req.Method),
				slog.String("route", c.Path()),
				slog.Int("status", c.Response().Status),
				slog.Float64("latency_ms", float64(time.Since(start).Microseconds())/1000),
				slog.Int64("bytes", c.Response().Size),
			}
			n := 6
			if t, ok := tenant.FromContext(ctx); ok {
				attrs[n], n = slog.String("tenant", t.Slug), n+1
			}
			if p, ok := auth.FromContext(ctx); ok {
				attrs[n], attrs[n+1], n = slog.Int64("user_id", p.UserID), slog.String("client_id", p.ClientID), n+2
			}
			// One AddAttrs: the record keeps five inline and grows its
			// slice once for the rest, not once per call.
			r := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
			r.AddAttrs(attrs[:n]...)
			_ = log.Handler().Handle(ctx, r) // a log line that cannot be written is not the request's failure
			return nil
		}
	}
}

// recoverer turns a panic into a logged 500 in the error format.
func recoverer(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) (err error) {
			defer func() {
				if r := recover(); r != nil {
					if r == http.ErrAbortHandler {
						panic(r)
					}
					err = &apperr.Error{Kind: apperr.Internal, Message: "internal error", Err: fmt.Errorf("panic: %v", r)}
				}
			}()
			return next(c)
		}
	}
}

// bodyLimit refuses bodies over limit bytes with 413 (in the error format)
// without reading past the limit.
func bodyLimit(limit int64) echo.MiddlewareFunc {
	if limit <= 0 {
		limit = 1 << 20
	}
	return middleware.BodyLimit(strconv.FormatInt(limit, 10) + "B")
}

// resolveTenant maps the Host (or, behind a trusted proxy, X-Forwarded-Host)
// to a tenant before anything tenant-scoped runs. A host outside the base
// domain, or an unknown tenant, is a 404 in the error format.
func resolveTenant(deps Deps) echo.MiddlewareFunc {
	base := strings.ToLower(strings.TrimPrefix(deps.Config.BaseDomain, "."))
	trustProxy := deps.Config.TrustProxy
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if isOperational(c) {
				return next(c)
			}
			host := c.Request().Host
			if trustProxy {
				if fh := c.Request().Header.Get("X-Forwarded-Host"); fh != "" {
					host = strings.TrimSpace(strings.Split(fh, ",")[0])
				}
			}
			slug, ok := tenantSlug(host, base)
			if !ok {
				return apperr.E(apperr.NotFound, "unknown host: no tenant is served here")
			}
			t, err := deps.Tenants.BySlug(c.Request().Context(), slug)
			if err != nil {
				if apperr.Is(err, apperr.NotFound) {
					return apperr.E(apperr.NotFound, "unknown tenant")
				}
				return err
			}
			ctx := tenant.NewContext(c.Request().Context(), t)
			c.SetRequest(c.Request().WithContext(ctx))
			return next(c)
		}
	}
}

// tenantSlug extracts "acme" from "acme.<base>[:port]".
func tenantSlug(host, base string) (string, bool) {
	host = strings.ToLower(host)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(host, ".")
	suffix := "." + base
	if !strings.HasSuffix(host, suffix) {
		return "", false
	}
	slug := strings.TrimSuffix(host, suffix)
	if !tenant.ValidSlug(slug) {
		return "", false
	}
	return slug, true
}

// Budget charges requests to the rate limits. Only an authenticated caller
// spends its tenant's budget; a failed authentication spends the client
// address's, so that nobody can lock a tenant out of its own API by sending
// garbage tokens to its host.
type Budget interface {
	// GuardAddress refuses (429) an address that has spent its budget of
	// failed authentications, before any authentication work.
	GuardAddress(c echo.Context, budget string) error
	// ChargeAddress spends one failed authentication of the address.
	ChargeAddress(c echo.Context, budget string) error
	// ChargeTenant spends one request of the authenticated caller's tenant.
	ChargeTenant(c echo.Context, budget string) error
}

type noBudget struct{}

func (noBudget) GuardAddress(echo.Context, string) error  { return nil }
func (noBudget) ChargeAddress(echo.Context, string) error { return nil }
func (noBudget) ChargeTenant(echo.Context, string) error  { return nil }

// bearerAuth authenticates every /api/1.0 request from the Authorization
// header only (never a query parameter or cookie) and puts the principal in
// the request context. Anything but a valid access token of this tenant is a
// 401 with WWW-Authenticate: Bearer, charged to the client address's budget;
// a valid one is charged to the tenant's.
func bearerAuth(a Authenticator, b Budget) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !isAPI(c) {
				return next(c)
			}
			if err := b.GuardAddress(c, ratelimit.BudgetAuth); err != nil {
				return err
			}
			p, err := authenticate(c, a)
			if err != nil {
				if apperr.Is(err, apperr.Unauthenticated) {
					if lerr := b.ChargeAddress(c, ratelimit.BudgetAuth); lerr != nil {
						return lerr
					}
				}
				return err
			}
			if err := b.ChargeTenant(c, ratelimit.BudgetAPI); err != nil {
				return err
			}
			c.SetRequest(c.Request().WithContext(auth.NewContext(c.Request().Context(), p)))
			return next(c)
		}
	}
}

// authenticate returns the principal of the request's bearer token.
func authenticate(c echo.Context, a Authenticator) (*auth.Principal, error) {
	h := c.Request().Header.Get(echo.HeaderAuthorization)
	scheme, token, ok := strings.Cut(h, " ")
	if h == "" {
		return nil, apperr.E(apperr.Unauthenticated, "an access token is required: send Authorization: Bearer <token>")
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsAny(token, " \t") {
		return nil, apperr.E(apperr.Unauthenticated, "malformed Authorization header: expected Bearer <token>")
	}
	if a == nil {
		return nil, apperr.E(apperr.Unauthenticated, "the access token is invalid")
	}
	ctx := c.Request().Context()
	p, err := a.AuthenticateBearer(ctx, token)
	if err != nil {
		if apperr.Is(err, apperr.Unauthenticated) {
			return nil, err
		}
		return nil, fmt.Errorf("authenticate bearer: %w", err)
	}
	if p == nil || p.TenantID != tenant.ID(ctx) {
		return nil, apperr.E(apperr.Unauthenticated, "the access token is invalid")
	}
	return p, nil
}
