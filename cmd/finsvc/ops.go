package main

import (
	"log/slog"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/pkg/config"
	"github.com/finsvc/finsvc/pkg/db"
	"github.com/finsvc/finsvc/pkg/docs"
	"github.com/finsvc/finsvc/pkg/httpapi"
	"github.com/finsvc/finsvc/pkg/metrics"
	"github.com/finsvc/finsvc/pkg/ratelimit"
)

// wireOps adds the operational layer to deps: Prometheus metrics (GET
// /metrics, request latency, token checks), the per-tenant rate limit and
// the /docs reference page. Call it last, after deps.Auth is set, so that
// token checks are counted. The limiter's Redis connection, if any, lives
// as long as the process.
func wireOps(deps *httpapi.Deps, d *db.DB, cfg *config.Config, logger *slog.Logger) error {
	m := metrics.New(d)
	limiter, err := ratelimit.New(cfg, logger)
	if err != nil {
		return err
	}
	if deps.Auth != nil {
		deps.Auth = metrics.Authenticator(deps.Auth)
	}
	// Metrics first, so that it also observes the limiter's 429s.
	deps.Middleware = append(deps.Middleware, m.Middleware(), limiter.Middleware())
	deps.Routes = append(deps.Routes, m.Register, func(e *echo.Echo) { docs.Register(e) })
	return nil
}
