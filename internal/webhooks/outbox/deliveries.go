package outbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/db"
)

// The life of a delivery row after Emit: workers claim it under a lease,
// record the outcome of each attempt, and the registry cancels, requeues or
// deletes it. Every write to the deliveries and delivery_history tables is
// in this package.

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
// owner still holds the lease; held reports whether it did. A final status
// moves the row to delivery_history (see move). then, if not nil, runs in
// the same transaction after the write (and only when held).
func Finish(ctx context.Context, d *db.DB, c Claimed, owner string, u Update, now time.Time, then func(tx *gorm.DB) error) (held bool, err error) {
	const where = "tenant_id = ? AND id = ? AND lease_owner = ? AND status = " + sqlDelivering
	args := []any{c.TenantID, c.ID, owner}
	write := func(tx *gorm.DB) error {
		var n int64
		if u.Status.Final() {
			var err error
			if n, err = move(tx, "deliveries", "delivery_history", where, args, u.columns(now)); err != nil {
				return err
			}
		} else {
			r := tx.Table("deliveries").Where(where, args...).Updates(u.columns(now))
			if r.Error != nil {
				return r.Error
			}
			n = r.RowsAffected
		}
		held = n > 0
		if held && then != nil {
			return then(tx)
		}
		return nil
	}
	if then == nil && (!u.Status.Final() || d.Dialect == db.Postgres) {
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

// logColumns are the columns of deliveries and delivery_history, in their
// order, with their PostgreSQL types: a moved row's new values are bound
// parameters in a SELECT list, whose types PostgreSQL cannot infer.
var logColumns = []struct{ name, pgType string }{
	{"tenant_id", "bigint"}, {"id", "uuid"}, {"webhook_id", "bigint"}, {"event_id", "uuid"},
	{"status", "text"}, {"attempts", "integer"}, {"next_attempt_at", "timestamptz"},
	{"lease_owner", "text"}, {"lease_expires_at", "timestamptz"}, {"last_status_code", "integer"},
	{"last_error", "text"}, {"response_excerpt", "text"}, {"last_attempt_at", "timestamptz"},
	{"created_at", "timestamptz"}, {"updated_at", "timestamptz"},
}

// move moves the rows of table from that match where (with args) to table
// to, with the columns of set replaced, inside tx, and returns how many
// moved. deliveries holds the live queue (pending, delivering) and
// delivery_history the finished deliveries (migration 00090): a row moves to
// the history when it reaches a final status and back when it is
// redelivered, so that the claim's table and indexes stay as large as the
// queue, whatever the history. On PostgreSQL the move is one statement (its
// DELETE locks the rows, so a concurrent purge or claim skips or waits for
// them); on SQLite it is an INSERT … SELECT and a DELETE under the
// database write lock, so tx must be a transaction there.
func move(tx *gorm.DB, from, to, where string, args []any, set map[string]any) (int64, error) {
	pg := tx.Dialector.Name() == "postgres"
	names := make([]string, len(logColumns))
	exprs := make([]string, len(logColumns))
	var vals []any
	for i, c := range logColumns {
		names[i] = c.name
		v, ok := set[c.name]
		switch {
		case !ok:
			exprs[i] = c.name
		case v == nil:
			exprs[i] = "NULL"
		case pg:
			exprs[i] = "CAST(? AS " + c.pgType + ")"
			vals = append(vals, v)
		default:
			exprs[i] = "?"
			vals = append(vals, v)
		}
	}
	cols, sel := strings.Join(names, ", "), strings.Join(exprs, ", ")
	if pg {
		r := tx.Exec("WITH moved AS (DELETE FROM "+from+" WHERE "+where+" RETURNING *) INSERT INTO "+to+" ("+cols+") SELECT "+sel+" FROM moved",
			append(append([]any{}, args...), vals...)...)
		return r.RowsAffected, r.Error
	}
	r := tx.Exec("INSERT INTO "+to+" ("+cols+") SELECT "+sel+" FROM "+from+" WHERE "+where, append(vals, args...)...)
	if r.Error != nil || r.RowsAffected == 0 {
		return 0, r.Error
	}
	return r.RowsAffected, tx.Exec("DELETE FROM "+from+" WHERE "+where, args...).Error
}

// CancelPending cancels the registration's deliveries that wait for an
// attempt, inside tx (they move to the history). Deliveries in flight
// finish; workers re-check eligibility before each attempt. reason, when not
// empty, becomes their last_error.
func CancelPending(tx *gorm.DB, tenantID, webhookID int64, reason string, now time.Time) error {
	set := map[string]any{"status": string(Cancelled), "next_attempt_at": nil, "updated_at": now}
	if reason != "" {
		set["last_error"] = reason
	}
	_, err := move(tx, "deliveries", "delivery_history", "tenant_id = ? AND webhook_id = ? AND status = "+sqlPending,
		[]any{tenantID, webhookID}, set)
	if err != nil {
		return fmt.Errorf("outbox: cancel pending deliveries of webhook %d: %w", webhookID, err)
	}
	return nil
}

// Requeue makes a delivery that is not in flight pending again, due now,
// with a fresh retry schedule (attempts restart at 0), inside tx: a pending
// one starts again, a finished one comes back from the history. A delivery
// in flight is left alone.
func Requeue(tx *gorm.DB, tenantID, webhookID int64, deliveryID string, now time.Time) error {
	set := map[string]any{
		"status": string(Pending), "attempts": 0, "next_attempt_at": now,
		"lease_owner": nil, "lease_expires_at": nil, "updated_at": now,
	}
	args := []any{tenantID, deliveryID, webhookID}
	r := tx.Table("deliveries").Where("tenant_id = ? AND id = ? AND webhook_id = ? AND status = "+sqlPending, args...).Updates(set)
	err := r.Error
	if err == nil && r.RowsAffected == 0 {
		_, err = move(tx, "delivery_history", "deliveries", "tenant_id = ? AND id = ? AND webhook_id = ?", args, set)
	}
	if err != nil {
		return fmt.Errorf("outbox: requeue delivery %s: %w", deliveryID, err)
	}
	return nil
}

// DeleteDeliveries removes every delivery of the registration, live or
// finished, inside tx (the delivery log belongs to the registration).
func DeleteDeliveries(tx *gorm.DB, tenantID, webhookID int64) error {
	for _, t := range []string{"deliveries", "delivery_history"} {
		if err := tx.Table(t).Where("tenant_id = ? AND webhook_id = ?", tenantID, webhookID).Delete(nil).Error; err != nil {
			return fmt.Errorf("outbox: delete deliveries of webhook %d: %w", webhookID, err)
		}
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
