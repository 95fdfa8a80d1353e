// Package ops wires the operational layer into the HTTP server's
// dependencies: Prometheus metrics (GET /metrics, request latency, token
// checks), the per-tenant rate limit and the /docs reference page. The
// binary (cmd/finsvc) and the load benchmark (bench/) share it, so that the
// benchmark measures the chain that production runs.
package ops

import (
	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/pkg/docs"
	"github.com/finsvc/finsvc/pkg/httpapi"
	"github.com/finsvc/finsvc/pkg/metrics"
	"github.com/finsvc/finsvc/pkg/ratelimit"
)

// Wire adds metrics, the rate limit and /docs to deps (deps.DB, Config and
// Logger must be set). Call it last, after deps.Auth is set, so that token
// checks are counted. close releases the limiter's Redis connection.
func Wire(deps *httpapi.Deps) (m *metrics.Metrics, close func() error, err error) {
	m = metrics.New(deps.DB)
	limiter, err := ratelimit.New(deps.Config, deps.Logger)
	if err != nil {
		return nil, nil, err
	}
	if deps.Auth != nil {
		deps.Auth = metrics.Authenticator(deps.Auth)
	}
	// Metrics first, so that it also observes the limiter's 429s.
	deps.Middleware = append(deps.Middleware, m.Middleware(), limiter.Middleware())
	deps.Routes = append(deps.Routes, m.Register, func(e *echo.Echo) { docs.Register(e) })
	return m, limiter.Close, nil
}
