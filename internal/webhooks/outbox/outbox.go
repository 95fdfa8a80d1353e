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
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
)

// Event kinds (the spec's event names).
const (
	ActFetchData  = "act.fetch_data"
	ActCreated    = "act.created"
	ActDuplicated = "act.duplicated"
	ActUpdated    = "act.updated"
	ActFinalized  = "act.finalized"
	ActDeleted    = "act.deleted"
	// ActDataUpdated is a change of data point values: accepted or edited.
	ActDataUpdated        = "act.data_updated"
	FetchRequestCompleted = "fetch_request.completed"
	ClientCreated         = "client.created"
	ClientUpdated         = "client.updated"
	ClientDeleted         = "client.deleted"
)

// WebhookTest is sent to one registration on request (EmitTo), whatever
// it subscribes to; no registration subscribes to it.
const WebhookTest = "webhook.test"

// Kinds lists every event kind a registration may subscribe to.
var Kinds = []string{
	ActFetchData, ActCreated, ActDuplicated, ActUpdated, ActFinalized, ActDeleted, ActDataUpdated,
	FetchRequestCompleted, ClientCreated, ClientUpdated, ClientDeleted,
}

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

// TracerName is the instrumentation scope of the outbox's spans.
const TracerName = "github.com/finsvc/finsvc/internal/webhooks/outbox"

// Outbox writes events. The zero value is usable (https only, no notifier,
// no spans).
type Outbox struct {
	Policy   Policy
	Notifier Notifier
	// Tracer, when set, makes each Emit a span (tracing on, internal/app).
	Tracer trace.Tracer
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
func (o *Outbox) Emit(ctx context.Context, tx *gorm.DB, ev Event) (queued int, err error) {
	if o.Tracer != nil {
		var span trace.Span
		ctx, span = o.Tracer.Start(ctx, "outbox.emit", trace.WithAttributes(attribute.String("finsvc.event.kind", ev.Kind)))
		defer func() {
			span.SetAttributes(attribute.Int("finsvc.deliveries.queued", queued))
			if err != nil {
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}()
	}
	if !ValidKind(ev.Kind) {
		return 0, fmt.Errorf("outbox: unknown event kind %q", ev.Kind)
	}
	ev, err = insertEvent(ctx, tx, ev, 0)
	if err != nil {
		return 0, err
	}
	var hooks []int64
	if err := o.eligible(ctx, tx, ev.Kind).Pluck("webhooks.id", &hooks).Error; err != nil {
		return 0, fmt.Errorf("outbox: select %s registrations: %w", ev.Kind, err)
	}
	if _, err := queue(ctx, tx, ev, hooks); err != nil {
		return 0, err
	}
	if len(hooks) > 0 && o.Notifier != nil {
		// In-process wake-up. It fires before the commit (GORM has no commit
		// hook): on SQLite the woken worker's claim waits for this
		// transaction's write lock, so it sees the rows once they commit; a
		// wake-up that finds nothing (rollback) costs one empty claim, and the
		// poll fallback covers anything missed.
		o.Notifier.Notify()
	}
	return len(hooks), nil
}

// EmitTo records a webhook.test event and its one pending delivery to
// webhookID, inside tx, and returns the delivery's id. The caller has
// checked that the registration exists and may receive it now; workers
// check eligibility again before the attempt, as for every delivery.
// ownerUserID is the registration's creator: the event is listed only to
// callers who may see the registration (ListEvents).
func EmitTo(ctx context.Context, tx *gorm.DB, webhookID, ownerUserID int64, data any, now time.Time) (deliveryID string, err error) {
	return EmitExampleTo(ctx, tx, webhookID, ownerUserID, WebhookTest, data, now)
}

// EmitExampleTo is EmitTo for an event of kind (one of Kinds or
// WebhookTest) with data, an example of that kind: a test of how the
// registration's endpoint handles it, delivered to that registration
// alone and listed, like a webhook.test event, only to those who may see
// the registration.
func EmitExampleTo(ctx context.Context, tx *gorm.DB, webhookID, ownerUserID int64, kind string, data any, now time.Time) (deliveryID string, err error) {
	if kind != WebhookTest && !ValidKind(kind) {
		return "", fmt.Errorf("outbox: unknown event kind %q", kind)
	}
	ev, err := insertEvent(ctx, tx, Event{Kind: kind, OccurredAt: now, Data: data}, ownerUserID)
	if err != nil {
		return "", err
	}
	ids, err := queue(ctx, tx, ev, []int64{webhookID})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// SeqName is the id_sequences name of the events' numbers (events.seq):
// the row stays locked until the writer commits, so numbers follow commit
// order within a tenant and the events API's cursors skip nothing. Take it
// last in a transaction (Emit and EmitTo do, after the change), after any
// db.Stamp, so that locks are taken in one order.
const SeqName = "events.seq"

// insertEvent writes ev's events row (giving it an id and a time when it
// has none), numbered in the tenant (SeqName); ownerUserID, when not 0,
// restricts who may list it.
func insertEvent(ctx context.Context, tx *gorm.DB, ev Event, ownerUserID int64) (Event, error) {
	if ev.ID == uuid.Nil {
		ev.ID = uuid.New()
	}
	if ev.OccurredAt.IsZero() {
		ev.OccurredAt = time.Now()
	}
	payload, err := json.Marshal(ev.Data)
	if err != nil {
		return ev, fmt.Errorf("outbox: marshal %s payload: %w", ev.Kind, err)
	}
	row := map[string]any{
		"tenant_id": tenant.ID(ctx), "id": ev.ID.String(), "kind": ev.Kind,
		"payload": string(payload), "occurred_at": ev.OccurredAt.UTC(),
	}
	seq, err := db.NextID(tx.WithContext(ctx), tenant.ID(ctx), SeqName)
	if err != nil {
		return ev, fmt.Errorf("outbox: number %s event: %w", ev.Kind, err)
	}
	row["seq"] = seq
	if ownerUserID != 0 {
		row["owner_user_id"] = ownerUserID
	}
	if ev.ExpiresAt != nil {
		row["expires_at"] = ev.ExpiresAt.UTC()
	}
	if tp := traceparent(ctx); tp != "" {
		row["traceparent"] = tp
	}
	if err := tx.WithContext(ctx).Table("events").Create(row).Error; err != nil {
		return ev, fmt.Errorf("outbox: insert %s event: %w", ev.Kind, err)
	}
	return ev, nil
}

// queue writes one pending delivery of ev per registration, due now, and
// wakes the workers of every replica when the transaction commits
// (PostgreSQL NOTIFY). It returns the deliveries' ids.
func queue(ctx context.Context, tx *gorm.DB, ev Event, hooks []int64) ([]string, error) {
	if len(hooks) == 0 {
		return nil, nil
	}
	tid := tenant.ID(ctx)
	now := time.Now().UTC()
	ids := make([]string, len(hooks))
	rows := make([]map[string]any, 0, len(hooks))
	for i, h := range hooks {
		ids[i] = uuid.NewString()
		rows = append(rows, map[string]any{
			"tenant_id": tid, "id": ids[i], "webhook_id": h, "event_id": ev.ID.String(),
			"status": string(Pending), "attempts": 0, "next_attempt_at": now,
			"created_at": now, "updated_at": now,
		})
	}
	if err := tx.WithContext(ctx).Table("deliveries").Create(rows).Error; err != nil {
		return nil, fmt.Errorf("outbox: insert %d deliveries: %w", len(rows), err)
	}
	if tx.Dialector.Name() == "postgres" {
		if err := tx.WithContext(ctx).Exec("SELECT pg_notify(?, '')", NotifyChannel).Error; err != nil {
			return nil, fmt.Errorf("outbox: notify workers: %w", err)
		}
	}
	return ids, nil
}

// traceparent is the W3C trace context of ctx's span, kept with the event
// so that its deliveries continue the trace of the request that caused it;
// "" when ctx has no span (tracing off).
func traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}
