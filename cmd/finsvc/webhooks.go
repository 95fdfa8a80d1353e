package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/finsvc/finsvc/pkg/config"
	"github.com/finsvc/finsvc/pkg/db"
	"github.com/finsvc/finsvc/pkg/httpapi"
	"github.com/finsvc/finsvc/pkg/webhooks"
)

// deliveries is this replica's webhook delivery worker (every replica runs
// one; they share the work through leases, see pkg/webhooks/delivery).
type deliveries struct {
	webhooks *webhooks.Service
	// Stop gives leased deliveries the shutdown grace period to finish and
	// then releases the rest to other replicas. It is safe to call more
	// than once and from several goroutines (server.OnShutdown and after
	// Serve returns).
	Stop func()
}

// startDeliveries starts the worker. Call it after cfg.ResolveSecret (the
// signing secrets are sealed under a key derived from it).
func startDeliveries(ctx context.Context, d *db.DB, cfg *config.Config, logger *slog.Logger) (*deliveries, error) {
	wh, err := webhooks.New(d, cfg, logger, deliveryMetrics())
	if err != nil {
		return nil, fmt.Errorf("webhook deliveries: %w", err)
	}
	w := wh.Worker
	// Not ctx: cancelling it would abandon attempts in flight; Stop ends
	// the worker gracefully instead.
	if err := w.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("webhook deliveries: %w", err)
	}
	stop := sync.OnceFunc(func() {
		sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
		defer cancel()
		_ = w.Stop(sctx)
		logger.Info("webhook deliveries stopped")
	})
	return &deliveries{webhooks: wh, Stop: stop}, nil
}

// Deps plugs the webhook context into the HTTP layer: events written by acts
// and fetch requests, and redeliveries, wake the worker at once.
func (dl *deliveries) Deps(deps *httpapi.Deps) {
	deps.Outbox = dl.webhooks.Outbox
	deps.Webhooks = dl.webhooks.Registry
}
