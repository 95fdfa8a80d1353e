package outbox

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/pkg/db"
)

// The life of a delivery row after Emit: workers claim it under a lease,
// record the outcome of each attempt, and the registry cancels, requeues or
// deletes it. Every write to the deliveries table is in this package.

// Update is what a claimed delivery ends with: its new status and, when an
// HTTP attempt was made, what the target answered.
type Update struct {
	Status Status
	// NextAttemptAt is when a Pending row is due again; nil otherwise.
	NextAttemptAt *time.Time
	// LastError replaces last_error when set. When nil, last_error keeps
	// its value, unless Attempt is set (a new attempt clears it).
	LastError *string
	// Attempt is set when the target was tried (successfully or not); it
	// counts in attempts.
	Attempt *Attempt
}

// Attempt describes one HTTP attempt.
type Attempt struct {
	Number     int // the row's attempts count including this one
	At         time.Time
	StatusCode int    // 0 when no response came
	Excerpt    string // the start of the response body, when one came
}

func (u Update) columns(now time.Time) map[string]any {
	set := map[string]any{
		"status": string(u.Status), "next_attempt_at": nil,
		"lease_owner": nil, "lease_expires_at": nil, "updated_at": now,
	}
	if u.NextAttemptAt != nil {
		set["next_attempt_at"] = *u.NextAttemptAt
	}
	if a := u.Attempt; a != nil {
		set["attempts"], set["last_attempt_at"] = a.Number, a.At
		set["last_status_code"], set["response_excerpt"], set["last_error"] = nil, nil, nil
		if a.StatusCode != 0 {
			set["last_status_code"], set["response_excerpt"] = a.StatusCode, a.Excerpt
		}
	}
	if u.LastError != nil {
		set["last_error"] = *u.LastError
	}
	return set
}

// Finish writes u to the claimed delivery and hands its lease back, provided
// owner still holds the lease; held reports whether it did. then, if not
// nil, runs in the same transaction after the write (and only when held).
func Finish(ctx context.Context, d *db.DB, c Claimed, owner string, u Update, now time.Time, then func(tx *gorm.DB) error) (held bool, err error) {
	write := func(tx *gorm.DB) error {
		r := tx.Table("deliveries").
			Where("tenant_id = ? AND id = ? AND lease_owner = ? AND status = "+sqlDelivering, c.TenantID, c.ID, owner).
			Updates(u.columns(now))
		if r.Error != nil {
			return r.Error
		}
		held = r.RowsAffected > 0
		if held && then != nil {
			return then(tx)
		}
		return nil
	}
	if then == nil {
		// A single statement needs no transaction; without this GORM
		// would wrap the UPDATE in BEGIN … COMMIT, two more round trips
		// after every attempt.
		err = write(d.WithContext(ctx).Session(&gorm.Session{SkipDefaultTransaction: true}))
	} else {
		err = d.Tx(ctx, write)
	}
	if err != nil {
		return false, fmt.Errorf("outbox: record delivery %s: %w", c.ID, err)
	}
	return held, nil
}

// CancelPending cancels the registration's deliveries that wait for an
// attempt, inside tx. Deliveries in flight finish; workers re-check
// eligibility before each attempt. reason, when not empty, becomes their
// last_error.
func CancelPending(tx *gorm.DB, tenantID, webhookID int64, reason string, now time.Time) error {
	set := map[string]any{"status": string(Cancelled), "next_attempt_at": nil, "updated_at": now}
	if reason != "" {
		set["last_error"] = reason
	}
	err := tx.Table("deliveries").
		Where("tenant_id = ? AND webhook_id = ? AND status = "+sqlPending, tenantID, webhookID).
		Updates(set).Error
	if err != nil {
		return fmt.Errorf("outbox: cancel pending deliveries of webhook %d: %w", webhookID, err)
	}
	return nil
}

// Requeue makes a delivery that is not in flight pending again, due now,
// with a fresh retry schedule (attempts restart at 0), inside tx. A
// delivery in flight is left alone.
func Requeue(tx *gorm.DB, tenantID, webhookID int64, deliveryID string, now time.Time) error {
	err := tx.Table("deliveries").
		Where("tenant_id = ? AND id = ? AND webhook_id = ? AND status <> "+sqlDelivering, tenantID, deliveryID, webhookID).
		Updates(map[string]any{
			"status": string(Pending), "attempts": 0, "next_attempt_at": now,
			"lease_owner": nil, "lease_expires_at": nil, "updated_at": now,
		}).Error
	if err != nil {
		return fmt.Errorf("outbox: requeue delivery %s: %w", deliveryID, err)
	}
	return nil
}

// DeleteDeliveries removes every delivery of the registration, inside tx
// (the delivery log belongs to the registration).
func DeleteDeliveries(tx *gorm.DB, tenantID, webhookID int64) error {
	if err := tx.Table("deliveries").Where("tenant_id = ? AND webhook_id = ?", tenantID, webhookID).Delete(nil).Error; err != nil {
		return fmt.Errorf("outbox: delete deliveries of webhook %d: %w", webhookID, err)
	}
	return nil
}

// Depth reports the outbox depth for metrics: deliveries waiting for an
// attempt (pending) and in flight (delivering), across tenants.
func Depth(ctx context.Context, d *db.DB) (pending, delivering int64, err error) {
	var rows []struct {
		Status Status
		N      int64
	}
	err = d.WithContext(ctx).Table("deliveries").Select("status, COUNT(*) AS n").
		Where("status IN " + sqlLive).Group("status").Scan(&rows).Error
	if err != nil {
		return 0, 0, fmt.Errorf("outbox: depth: %w", err)
	}
	for _, r := range rows {
		if r.Status == Pending {
			pending = r.N
		} else {
			delivering = r.N
		}
	}
	return pending, delivering, nil
}
