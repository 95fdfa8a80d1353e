package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/finsvc/finsvc/internal/db"
)

// Stats is the outbox as an operator watches it, across tenants (metrics;
// never shown to a tenant).
type Stats struct {
	Pending, Delivering int64
	// OldestDue is when the delivery that has waited longest for a worker
	// became due (next_attempt_at of a due row: pending, or delivering
	// under an expired lease); zero when none is due. A delivery waiting
	// for its next scheduled retry is not due, however old it is.
	OldestDue time.Time
	// Endpoints counts active registrations by health state (State).
	Endpoints map[HealthState]int64
	// FailingSince is the start of the longest current run of failures of
	// an active registration (failing_since); zero when none is failing.
	FailingSince time.Time
}

// ReadStats reads Stats at now: Depth, then three small queries (the due
// rows through the claim's index, the registrations' health columns).
func ReadStats(ctx context.Context, d *db.DB, now time.Time) (Stats, error) {
	var s Stats
	var err error
	if s.Pending, s.Delivering, err = Depth(ctx, d); err != nil {
		return s, err
	}
	q := d.WithContext(ctx)
	var due []struct {
		NextAttemptAt time.Time `gorm:"column:next_attempt_at"`
	}
	err = q.Raw(`SELECT next_attempt_at FROM deliveries WHERE `+dueSQL+` ORDER BY next_attempt_at LIMIT 1`,
		map[string]any{"now": now}).Scan(&due).Error
	if err != nil {
		return s, fmt.Errorf("outbox: oldest due delivery: %w", err)
	}
	if len(due) > 0 {
		s.OldestDue = due[0].NextAttemptAt
	}
	var states []struct {
		BackingOff int64 `gorm:"column:backing_off"`
		Failing    int64 `gorm:"column:failing"`
		Total      int64 `gorm:"column:total"`
	}
	err = q.Raw(`SELECT
  COALESCE(SUM(CASE WHEN circuit_open_until > @now THEN 1 ELSE 0 END), 0) AS backing_off,
  COALESCE(SUM(CASE WHEN (circuit_open_until IS NULL OR circuit_open_until <= @now) AND consecutive_failures > 0 THEN 1 ELSE 0 END), 0) AS failing,
  COUNT(*) AS total
FROM webhooks WHERE active`, map[string]any{"now": now}).Scan(&states).Error
	if err != nil {
		return s, fmt.Errorf("outbox: endpoint health: %w", err)
	}
	s.Endpoints = map[HealthState]int64{Healthy: 0, Failing: 0, BackingOff: 0}
	if len(states) > 0 {
		r := states[0]
		s.Endpoints[BackingOff], s.Endpoints[Failing] = r.BackingOff, r.Failing
		s.Endpoints[Healthy] = r.Total - r.BackingOff - r.Failing
	}
	var failing []struct {
		FailingSince time.Time `gorm:"column:failing_since"`
	}
	err = q.Raw(`SELECT failing_since FROM webhooks WHERE active AND failing_since IS NOT NULL ORDER BY failing_since LIMIT 1`).
		Scan(&failing).Error
	if err != nil {
		return s, fmt.Errorf("outbox: failing endpoints: %w", err)
	}
	if len(failing) > 0 {
		s.FailingSince = failing[0].FailingSince
	}
	return s, nil
}
