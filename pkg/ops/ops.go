// Package ops wires the operational layer into the HTTP server's
// dependencies: Prometheus metrics (GET /metrics, request latency, token
// checks), the per-tenant rate limit and the /docs reference page. The
// binary (cmd/finsvc) and the load benchmark (bench/) share it, so that the
// benchmark measures the chain that production runs.
package ops

import (
	"context"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/pkg/authcache"
	"github.com/finsvc/finsvc/pkg/db"
	"github.com/finsvc/finsvc/pkg/docs"
	"github.com/finsvc/finsvc/pkg/httpapi"
	"github.com/finsvc/finsvc/pkg/metrics"
	"github.com/finsvc/finsvc/pkg/ratelimit"
)

// Token cache settings: entries live at most TokenCacheTTL (revocation is
// immediate through PostgreSQL notifications; the TTL only bounds what a
// silently lost listener could miss).
const (
	TokenCacheTTL  = 10 * time.Second
	TokenCacheSize = 100_000
)

// Wire adds metrics, the rate limit, the bearer token cache and /docs to
// deps (deps.DB, Config and Logger must be set). Call it last, after
// deps.Auth is set, so that the cache and the token check counter wrap it.
// close stops the cache listener and releases the limiter's Redis
// connection.
func Wire(deps *httpapi.Deps) (m *metrics.Metrics, close func() error, err error) {
	m = metrics.New(deps.DB)
	limiter, err := ratelimit.New(deps.Config, deps.Logger)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	close = func() error { cancel(); return limiter.Close() }
	if deps.Auth != nil {
		// The cache serves only while its LISTEN connection is up, which
		// needs PostgreSQL; on SQLite every check goes to the database.
		if deps.DB != nil && deps.DB.Dialect == db.Postgres && deps.Config.DatabaseURL != "" {
			c := authcache.New(deps.Auth, TokenCacheTTL, TokenCacheSize)
			go c.ListenPostgres(ctx, deps.Config.DatabaseURL, deps.Logger)
			deps.Auth = c
		}
		deps.Auth = metrics.Authenticator(deps.Auth)
	}
	// Metrics first, so that it also observes the limiter's 429s.
	deps.Middleware = append(deps.Middleware, m.Middleware(), limiter.Middleware())
	deps.Routes = append(deps.Routes, m.Register, func(e *echo.Echo) { docs.Register(e) })
	return m, close, nil
}
