package main

import (
	"context"
	"log/slog"

	"github.com/finsvc/finsvc/pkg/db"
	"github.com/finsvc/finsvc/pkg/oauth"
)

// startJanitor starts this replica's OAuth janitor (expired codes, tokens
// and sessions; every 10 minutes, first after a minute) and returns its
// stop function, safe to call more than once (server.OnShutdown and after
// Serve returns).
func startJanitor(ctx context.Context, d *db.DB, logger *slog.Logger) func() {
	j := oauth.NewJanitor(d, logger)
	// Not ctx: Stop ends it, like the delivery worker.
	j.Start(context.WithoutCancel(ctx))
	return j.Stop
}
