package main

import (
	"log/slog"
	"net/http"

	"github.com/finsvc/finsvc/pkg/config"
	"github.com/finsvc/finsvc/pkg/db"
	"github.com/finsvc/finsvc/pkg/httpapi"
	"github.com/finsvc/finsvc/pkg/tenant"
)

// buildHandler wires the HTTP layer's dependencies. serve and demo share
// it; capabilities (OAuth, webhooks, rate limits) add their wiring here.
func buildHandler(d *db.DB, cfg *config.Config, logger *slog.Logger, hooks ...func(*httpapi.Deps)) (http.Handler, error) {
	deps := httpapi.Deps{
		DB:      d,
		Config:  cfg,
		Logger:  logger,
		Tenants: tenant.NewStore(d),
	}
	for _, h := range hooks {
		h(&deps)
	}
	if err := wireOps(&deps); err != nil { // last: wraps deps.Auth
		return nil, err
	}
	return httpapi.New(deps)
}
