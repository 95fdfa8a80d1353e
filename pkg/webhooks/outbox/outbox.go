// Package outbox owns the events and deliveries tables. Emit records a
// webhook event durably, inside the business transaction that caused it:
// one events row plus one deliveries row per eligible registration. A crash
// after commit loses nothing, a rollback leaves nothing behind, and delivery
// workers pick the rows up later. Call Emit with the same *gorm.DB
// transaction that writes the business change.
//
// The rest of a delivery's life is here too (deliveries.go): the claim
// under a lease, the recorded outcome of each attempt, cancellation,
// redelivery and deletion. The eligibility rule (eligible.go) and the
// delivery statuses (status.go) have their one home here.
package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/pkg/tenant"
)

// Event kinds (the spec's event names).
const (
	ActFetchData  = "act.fetch_data"
	ActCreated    = "act.created"
	ActDuplicated = "act.duplicated"
)

// Kinds lists every event kind a registration may subscribe to.
var Kinds = []string{ActFetchData, ActCreated, ActDuplicated}

// ValidKind reports whether k is a known event kind.
func ValidKind(k string) bool {
	for _, x := range Kinds {
		if x == k {
			return true
		}
	}
	return false
}

// Event is one occurrence to deliver. ID is the envelope id, the same for
// every destination and every retry.
type Event struct {
	ID         uuid.UUID
	Kind       string
	OccurredAt time.Time
	Data       any // marshalled as the envelope's data object
	// ExpiresAt, when set, ends retries (act.fetch_data: the request's deadline).
	ExpiresAt *time.Time
}

// NotifyChannel is the PostgreSQL NOTIFY channel delivery workers LISTEN on.
// Emit notifies it inside the business transaction, and PostgreSQL delivers
// the notification only when (and if) that transaction commits, to every
// replica.
const NotifyChannel = "finsvc_deliveries"

// Notifier is told after a commit that deliveries are due, so that workers
// wake without polling delay. Nil is fine.
type Notifier interface{ Notify() }

// Outbox writes events. The zero value is usable (https only, no notifier).
type Outbox struct {
	Policy   Policy
	Notifier Notifier
}

// eligible selects the current tenant's registrations of kind that may
// receive an event now (Policy.conditions).
func (o *Outbox) eligible(ctx context.Context, tx *gorm.DB, kind string) *gorm.DB {
	return tenant.Scope(ctx, tx.Table("webhooks")).
		Where("webhooks.event = ?", kind).
		Where(o.Policy.eligibleSQL())
}

// EligibleCount reports how many registrations would receive an event of kind
// now (fetch requests are refused when none would).
func (o *Outbox) EligibleCount(ctx context.Context, tx *gorm.DB, kind string) (int64, error) {
	var n int64
	if err := o.eligible(ctx, tx, kind).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("outbox: count eligible %s registrations: %w", kind, err)
	}
	return n, nil
}

// Emit records ev and one pending delivery per eligible registration, inside
// tx, and returns the number of deliveries queued. The event row is written
// even when nobody is subscribed, so that the history of what happened is
// complete and a later redelivery has its source.
func (o *Outbox) Emit(ctx context.Context, tx *gorm.DB, ev Event) (int, error) {
	if !ValidKind(ev.Kind) {
		return 0, fmt.Errorf("outbox: unknown event kind %q", ev.Kind)
	}
	if ev.ID == uuid.Nil {
		ev.ID = uuid.New()
	}
	if ev.OccurredAt.IsZero() {
		ev.OccurredAt = time.Now()
	}
	payload, err := json.Marshal(ev.Data)
	if err != nil {
		return 0, fmt.Errorf("outbox: marshal %s payload: %w", ev.Kind, err)
	}
	tid := tenant.ID(ctx)
	row := map[string]any{
		"tenant_id": tid, "id": ev.ID.String(), "kind": ev.Kind,
		"payload": string(payload), "occurred_at": ev.OccurredAt.UTC(),
	}
	if ev.ExpiresAt != nil {
		row["expires_at"] = ev.ExpiresAt.UTC()
	}
	if err := tx.WithContext(ctx).Table("events").Create(row).Error; err != nil {
		return 0, fmt.Errorf("outbox: insert %s event: %w", ev.Kind, err)
	}
	var hooks []int64
	if err := o.eligible(ctx, tx, ev.Kind).Pluck("webhooks.id", &hooks).Error; err != nil {
		return 0, fmt.Errorf("outbox: select %s registrations: %w", ev.Kind, err)
	}
	if len(hooks) == 0 {
		return 0, nil
	}
	now := time.Now().UTC()
	rows := make([]map[string]any, 0, len(hooks))
	for _, h := range hooks {
		rows = append(rows, map[string]any{
			"tenant_id": tid, "id": uuid.NewString(), "webhook_id": h, "event_id": ev.ID.String(),
			"status": string(Pending), "attempts": 0, "next_attempt_at": now,
			"created_at": now, "updated_at": now,
		})
	}
	if err := tx.WithContext(ctx).Table("deliveries").Create(rows).Error; err != nil {
		return 0, fmt.Errorf("outbox: insert %d deliveries: %w", len(rows), err)
	}
	if tx.Dialector.Name() == "postgres" {
		if err := tx.WithContext(ctx).Exec("SELECT pg_notify(?, '')", NotifyChannel).Error; err != nil {
			return 0, fmt.Errorf("outbox: notify workers: %w", err)
		}
	}
	if o.Notifier != nil {
		// In-process wake-up. It fires before the commit (GORM has no commit
		// hook): on SQLite the woken worker's claim waits for this
		// transaction's write lock, so it sees the rows once they commit; a
		// wake-up that finds nothing (rollback) costs one empty claim, and the
		// poll fallback covers anything missed.
		o.Notifier.Notify()
	}
	return len(rows), nil
}
