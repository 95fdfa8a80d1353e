package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/webhooks/retry"
)

// Endpoint health: a circuit breaker per registration, so that a dead
// endpoint holds no worker and is disabled after a long outage. This is
// the rule's one home: the claim reads it (claimableSQL, capSQL) and the
// delivery workers feed it (RecordHealth).
//
//   - Every attempt's outcome is recorded on the registration: a success
//     closes the circuit and clears the failure run; a failure (no answer,
//     a timeout, or anything but 2xx) extends it.
//   - After TripAfter consecutive failures the circuit opens: the claim
//     skips the registration until circuit_open_until, so its due
//     deliveries wait on the retry schedule without occupying workers
//     (nothing is lost: they stay pending and keep their place). Each
//     further failure doubles the pause, from BreakerBase up to BreakerMax.
//   - When the pause is over the circuit is half-open: the claim allows one
//     attempt in flight (a probe) until a success closes it.
//   - A registration whose every attempt has failed for AutoDisableAfter is
//     disabled (RecordHealth reports it; the worker disables it with
//     registry.Disable). What counts is one continuous run of failures:
//     failing_since is the first failure of the current run, and a run
//     ends not only at a success but also at a gap of more than
//     FailureRunGap since the previous failure (last_failure_at). The next
//     failure then starts a new run (failing_since = now, one consecutive
//     failure). Without the gap rule an endpoint that failed once, got no
//     traffic for 5 days and then failed once more would be disabled after
//     two failures: failing_since measured the time since the last
//     success, not how long the endpoint had been failing.
const (
	TripAfter        = 3
	BreakerBase      = 30 * time.Second
	BreakerMax       = 10 * time.Minute
	AutoDisableAfter = 5 * 24 * time.Hour
	// FailureRunGap is longer than any wait between two attempts of a
	// registration whose deliveries keep failing: a failed delivery's next
	// attempt is at most retry.MaxRetryAfter (24 h) away (a Retry-After at
	// its cap; the schedule's longest step, jitter included, is shorter),
	// the open circuit adds at most BreakerMax, and an hour covers the
	// attempt itself and a busy worker. A longer gap means the registration
	// had nothing to deliver, not that it kept failing.
	FailureRunGap = retry.MaxRetryAfter + BreakerMax + time.Hour
)

// AutoDisableReason is the disabled_reason of a registration disabled
// after AutoDisableAfter of failures.
const AutoDisableReason = "every delivery attempt failed for 5 days"

// claimableSQL: the circuit of webhooks w is closed or its pause is over.
const claimableSQL = `(w.circuit_open_until IS NULL OR w.circuit_open_until <= @now)`

// capSQL is the registration's cap: one probe while half-open, @cap
// otherwise.
var capSQL = fmt.Sprintf(`CASE WHEN w.consecutive_failures >= %d THEN 1 ELSE @cap END`, TripAfter)

// BreakerPause is how long the circuit stays open after the failures-th
// consecutive failure (0 while it stays closed).
func BreakerPause(failures int) time.Duration {
	if failures < TripAfter {
		return 0
	}
	d := BreakerBase
	for i := TripAfter; i < failures && d < BreakerMax; i++ {
		d *= 2
	}
	return min(d, BreakerMax)
}

// HealthState is how a registration's endpoint is doing, as the API shows
// it.
type HealthState string

// Health states.
const (
	Healthy    HealthState = "healthy"     // the last attempt succeeded (or none was made)
	Failing    HealthState = "failing"     // recent attempts failed; still attempted
	BackingOff HealthState = "backing_off" // the circuit is open: no attempts until circuit_open_until
)

// State derives the state from the recorded columns at now.
func State(consecutiveFailures int, circuitOpenUntil *time.Time, now time.Time) HealthState {
	switch {
	case circuitOpenUntil != nil && circuitOpenUntil.After(now):
		return BackingOff
	case consecutiveFailures > 0:
		return Failing
	default:
		return Healthy
	}
}

// successRefresh: a success on a healthy registration rewrites
// last_success_at at most this often, so that the hot path of a busy
// healthy endpoint writes nothing (the UPDATE matches no row).
const successRefresh = time.Second

// RecordHealth records one attempt's outcome on the registration (ok: the
// target answered 2xx; reason: otherwise, what went wrong) and reports
// whether the registration has now failed for AutoDisableAfter.
func RecordHealth(ctx context.Context, d *db.DB, tenantID, webhookID int64, ok bool, reason string, now time.Time) (disable bool, err error) {
	q := d.WithContext(ctx)
	if ok {
		err = q.Exec(`UPDATE webhooks SET consecutive_failures = 0, failing_since = NULL, circuit_open_until = NULL, last_success_at = ?
WHERE tenant_id = ? AND id = ? AND (consecutive_failures <> 0 OR last_success_at IS NULL OR last_success_at < ?)`,
			now, tenantID, webhookID, now.Add(-successRefresh)).Error
		if err != nil {
			return false, fmt.Errorf("outbox: record success of webhook %d: %w", webhookID, err)
		}
		return false, nil
	}
	var rows []struct {
		ConsecutiveFailures int       `gorm:"column:consecutive_failures"`
		FailingSince        time.Time `gorm:"column:failing_since"`
	}
	// A failure more than FailureRunGap after the previous one starts a new
	// run (the SET expressions all read the row as it was).
	stale := now.Add(-FailureRunGap)
	err = q.Raw(`UPDATE webhooks SET
  consecutive_failures = CASE WHEN last_failure_at < ? THEN 1 ELSE consecutive_failures + 1 END,
  failing_since = CASE WHEN failing_since IS NULL OR last_failure_at < ? THEN ? ELSE failing_since END,
  last_failure_at = ?, last_failure_reason = ?
WHERE tenant_id = ? AND id = ?
RETURNING consecutive_failures, failing_since`, stale, stale, now, now, reason, tenantID, webhookID).Scan(&rows).Error
	if err != nil {
		return false, fmt.Errorf("outbox: record failure of webhook %d: %w", webhookID, err)
	}
	if len(rows) == 0 {
		return false, nil // deleted meanwhile
	}
	r := rows[0]
	if pause := BreakerPause(r.ConsecutiveFailures); pause > 0 {
		// Only while the run is still the one counted above: two attempts
		// failing together must not let the earlier (shorter) pause land
		// after the later one and shorten it.
		if err := q.Exec(`UPDATE webhooks SET circuit_open_until = ? WHERE tenant_id = ? AND id = ? AND consecutive_failures = ?`,
			now.Add(pause), tenantID, webhookID, r.ConsecutiveFailures).Error; err != nil {
			return false, fmt.Errorf("outbox: open the circuit of webhook %d: %w", webhookID, err)
		}
	}
	return !r.FailingSince.After(now.Add(-AutoDisableAfter)), nil
}
