package main

import (
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/pkg/config"
	"github.com/finsvc/finsvc/pkg/db"
	"github.com/finsvc/finsvc/pkg/httpapi"
	"github.com/finsvc/finsvc/pkg/oauth"
	"github.com/finsvc/finsvc/pkg/tenant"
)

// buildHandler wires the HTTP layer's dependencies. serve and demo share
// it; capabilities (OAuth, webhooks, rate limits) add their wiring here or
// through hooks (the webhook delivery worker plugs its wake-up signal in).
// cfg.Secret must be resolved (config.ResolveSecret) before.
func buildHandler(d *db.DB, cfg *config.Config, logger *slog.Logger, hooks ...func(*httpapi.Deps)) (http.Handler, error) {
	authz, err := oauth.New(d, cfg, logger)
	if err != nil {
		return nil, err
	}
	deps := httpapi.Deps{
		DB:      d,
		Config:  cfg,
		Logger:  logger,
		Tenants: tenant.NewStore(d),
		Auth:    authz,
		Routes:  []func(*echo.Echo){authz.Routes},
	}
	for _, h := range hooks {
		h(&deps)
	}
	if err := wireOps(&deps); err != nil { // last: wraps deps.Auth
		return nil, err
	}
	return httpapi.New(deps)
}
