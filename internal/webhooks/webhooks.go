// Package webhooks assembles the webhook context: the outbox that records
// events in business transactions (outbox), the registrations and their
// delivery log (registry), and the delivery worker (delivery). The signing
// secrets of registrations are sealed under a key derived from the global
// secret; New derives it once and shares it between the registry, which
// seals, and the worker, which opens.
package webhooks

import (
	"fmt"
	"log/slog"

	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/webhooks/delivery"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
)

// Service is the webhook context of one process.
type Service struct {
	// Outbox records events inside business transactions (acts, fetch
	// requests) and wakes Worker.
	Outbox *outbox.Outbox
	// Registry stores registrations and serves the delivery log; a
	// redelivery wakes Worker.
	Registry *registry.Store
	// Worker delivers. The caller starts and stops it.
	Worker *delivery.Worker
}

// New builds the webhook context over d. cfg supplies the global secret
// (Secret, resolved before), the SSRF switch (WebhookAllowPrivate, which
// also admits http:// targets) and the attempt timeout; opts configure the
// worker. pol is the operation policy the registry asks before a change.
func New(d *db.DB, cfg *config.Config, logger *slog.Logger, pol *auth.Policy, opts ...delivery.Option) (*Service, error) {
	ring, err := cfg.Ring()
	if err != nil {
		return nil, fmt.Errorf("webhooks: the key ring is not resolved (FINSVC_SECRET): %w", err)
	}
	box, err := sealing.New(ring)
	if err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	w, err := delivery.NewWorker(d, box, cfg, logger, opts...)
	if err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	wake := w.Notifier()
	return &Service{
		Outbox:   &outbox.Outbox{Policy: outbox.Policy{AllowHTTP: cfg.WebhookAllowPrivate}, Notifier: wake},
		Registry: registry.New(d, box, registry.Options{Policy: pol, AllowPrivate: cfg.WebhookAllowPrivate, Notifier: wake}),
		Worker:   w,
	}, nil
}
