package main

import (
	"github.com/finsvc/finsvc/pkg/httpapi"
	"github.com/finsvc/finsvc/pkg/metrics"
	"github.com/finsvc/finsvc/pkg/ops"
	"github.com/finsvc/finsvc/pkg/webhooks/delivery"
)

// wireOps adds metrics, the rate limit and /docs (pkg/ops). Call it last,
// after deps.Auth is set. The limiter's Redis connection, if any, lives as
// long as the process.
func wireOps(deps *httpapi.Deps) error {
	_, _, err := ops.Wire(deps)
	return err
}

// deliveryMetrics counts every attempted delivery by outcome
// (finsvc_webhook_deliveries_total). Released and lost leases are not
// outcomes of an attempt and are not counted.
func deliveryMetrics() delivery.Option {
	return delivery.WithObserver(func(r delivery.Result) {
		switch r.Outcome {
		case delivery.Succeeded, delivery.Retrying, delivery.Failed, delivery.Disabled, delivery.Cancelled:
			metrics.DeliveryOutcome(string(r.Outcome))
		}
	})
}
