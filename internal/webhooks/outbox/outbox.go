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
	"slices"
	"strings"
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

// The event kinds (constants, Kinds and SentOnly) are generated from the
// spec's EventKind and DeliveryEventKind enums (kinds.gen.go); the service
// checks them against the spec's callbacks at start-up.
//
//go:generate go run ../../../openapi/cmd/derive -spec ../../../openapi/finsvc.yaml -what kinds -package outbox -o kinds.gen.go

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
	// Example marks example data sent to test an endpoint (EmitExampleTo):
	// delivered like any event, never listed by the events API.
	Example bool
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

// eligible selects the current tenant's registrations subscribed to one of
// kinds (one of its webhook_event_types, or all_events) that may receive
// an event now (Policy.conditions).
func (o *Outbox) eligible(ctx context.Context, tx *gorm.DB, kinds ...string) *gorm.DB {
	return tenant.Scope(ctx, tx.Table("webhooks")).
		Where("(webhooks.all_events OR EXISTS (SELECT 1 FROM webhook_event_types k "+
			"WHERE k.tenant_id = webhooks.tenant_id AND k.webhook_id = webhooks.id AND k.kind IN ?))", kinds).
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
	return o.EmitAll(ctx, tx, ev)
}

// EmitAll is Emit for the events of one change, numbered in the order
// given, in the same statements as one event: their numbers, their rows,
// their registrations and their deliveries each take one statement (and
// the wake-up one), whatever the number of events. A change that reports
// itself with several events (a write of data points that also completes
// its fetch request) costs no more round trips than one.
func (o *Outbox) EmitAll(ctx context.Context, tx *gorm.DB, evs ...Event) (queued int, err error) {
	if len(evs) == 0 {
		return 0, nil
	}
	kinds := make([]string, 0, len(evs))
	for _, ev := range evs {
		if !ValidKind(ev.Kind) {
			return 0, fmt.Errorf("outbox: unknown event kind %q", ev.Kind)
		}
		if !slices.Contains(kinds, ev.Kind) {
			kinds = append(kinds, ev.Kind)
		}
	}
	if o.Tracer != nil {
		var span trace.Span
		ctx, span = o.Tracer.Start(ctx, "outbox.emit", trace.WithAttributes(attribute.String("finsvc.event.kind", strings.Join(kinds, ","))))
		defer func() {
			span.SetAttributes(attribute.Int("finsvc.deliveries.queued", queued))
			if err != nil {
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}()
	}
	if evs, err = insertEvents(ctx, tx, evs, 0); err != nil {
		return 0, err
	}
	// Each registration subscribed to an event's kind receives it once,
	// however it subscribes (deliveries_event_webhook_key says so too):
	// one row per registration and kind of kinds it lists, or one with no
	// kind for a registration of all events that lists none of them; one
	// statement whatever the number of kinds.
	var rows []struct {
		ID        int64
		AllEvents bool
		Kind      *string
	}
	err = tenant.Scope(ctx, tx.Table("webhooks")).
		Select("webhooks.id, webhooks.all_events, k.kind").
		Joins("LEFT JOIN webhook_event_types k ON k.tenant_id = webhooks.tenant_id AND k.webhook_id = webhooks.id AND k.kind IN ?", kinds).
		Where("(webhooks.all_events OR k.kind IS NOT NULL)").Where(o.Policy.eligibleSQL()).
		Order("webhooks.id").Scan(&rows).Error
	if err != nil {
		return 0, fmt.Errorf("outbox: select %s registrations: %w", strings.Join(kinds, ", "), err)
	}
	var hooks []int64
	all := map[int64]bool{}
	takes := map[int64][]string{}
	for _, r := range rows {
		if len(hooks) == 0 || hooks[len(hooks)-1] != r.ID { // ordered by id
			hooks = append(hooks, r.ID)
		}
		all[r.ID] = r.AllEvents
		if r.Kind != nil {
			takes[r.ID] = append(takes[r.ID], *r.Kind)
		}
	}
	var due []delivery
	for _, ev := range evs {
		for _, h := range hooks {
			if all[h] || slices.Contains(takes[h], ev.Kind) {
				due = append(due, delivery{ev.ID, h})
			}
		}
	}
	if _, err := queue(ctx, tx, due); err != nil {
		return 0, err
	}
	if len(due) > 0 && o.Notifier != nil {
		// In-process wake-up, once the transaction (the outermost one,
		// when tx is a savepoint of an ambient transaction) has committed:
		// a worker woken before would find nothing to claim. A rollback
		// wakes nobody.
		db.AfterCommit(tx, o.Notifier.Notify)
	}
	return len(due), nil
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
// alone. A webhook.test event is listed only to those who may see the
// registration; an example of another kind is not listed at all.
func EmitExampleTo(ctx context.Context, tx *gorm.DB, webhookID, ownerUserID int64, kind string, data any, now time.Time) (deliveryID string, err error) {
	if kind != WebhookTest && !ValidKind(kind) {
		return "", fmt.Errorf("outbox: unknown event kind %q", kind)
	}
	// An example of a real kind describes nothing that happened: it is
	// not numbered, so the events API (which lists numbered events only)
	// never offers it to an integrator reconciling from it.
	evs, err := insertEvents(ctx, tx, []Event{{Kind: kind, OccurredAt: now, Data: data, Example: kind != WebhookTest}}, ownerUserID)
	if err != nil {
		return "", err
	}
	ids, err := queue(ctx, tx, []delivery{{evs[0].ID, webhookID}})
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

// insertEvents writes the events rows of evs in one statement (giving
// each an id and a time when it has none), numbered in the tenant
// (SeqName) in the order given; ownerUserID, when not 0, restricts who
// may list them.
func insertEvents(ctx context.Context, tx *gorm.DB, evs []Event, ownerUserID int64) ([]Event, error) {
	tid := tenant.ID(ctx)
	tp := traceparent(ctx)
	rows := make([]map[string]any, len(evs))
	for i := range evs {
		ev := &evs[i]
		if ev.ID == uuid.Nil {
			ev.ID = uuid.New()
		}
		if ev.OccurredAt.IsZero() {
			ev.OccurredAt = time.Now()
		}
		payload, err := json.Marshal(ev.Data)
		if err != nil {
			return evs, fmt.Errorf("outbox: marshal %s payload: %w", ev.Kind, err)
		}
		// Every row has every column (a multi-row INSERT lists the union
		// of its rows' columns), NULL where the event has no value.
		row := map[string]any{
			"tenant_id": tid, "id": ev.ID.String(), "kind": ev.Kind,
			"payload": string(payload), "occurred_at": ev.OccurredAt.UTC(),
			"owner_user_id": nil, "expires_at": nil, "traceparent": nil,
		}
		if ownerUserID != 0 {
			row["owner_user_id"] = ownerUserID
		}
		if ev.ExpiresAt != nil {
			row["expires_at"] = ev.ExpiresAt.UTC()
		}
		if tp != "" {
			row["traceparent"] = tp
		}
		rows[i] = row
	}
	listed := 0
	for i := range evs {
		rows[i]["seq"] = nil
		if !evs[i].Example {
			listed++
		}
	}
	if listed > 0 {
		next, err := db.NextIDs(tx.WithContext(ctx), tid, SeqName, listed)
		if err != nil {
			return evs, fmt.Errorf("outbox: number %s event: %w", evs[0].Kind, err)
		}
		for i := range rows {
			if !evs[i].Example {
				rows[i]["seq"] = next
				next++
			}
		}
	}
	if err := tx.WithContext(ctx).Table("events").Create(rows).Error; err != nil {
		return evs, fmt.Errorf("outbox: insert %s event: %w", evs[0].Kind, err)
	}
	return evs, nil
}

// delivery is one event due to one registration.
type delivery struct {
	event   uuid.UUID
	webhook int64
}

// queue writes one pending delivery per item of due, due now, in one
// statement, and wakes the workers of every replica when the transaction
// commits (PostgreSQL NOTIFY). It returns the deliveries' ids.
func queue(ctx context.Context, tx *gorm.DB, due []delivery) ([]string, error) {
	if len(due) == 0 {
		return nil, nil
	}
	tid := tenant.ID(ctx)
	now := time.Now().UTC()
	ids := make([]string, len(due))
	rows := make([]map[string]any, 0, len(due))
	for i, d := range due {
		ids[i] = uuid.NewString()
		rows = append(rows, map[string]any{
			"tenant_id": tid, "id": ids[i], "webhook_id": d.webhook, "event_id": d.event.String(),
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
