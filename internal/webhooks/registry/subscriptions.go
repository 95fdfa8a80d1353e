package registry

import (
	"context"
	"fmt"
	"slices"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// Subscription is what a registration receives: the events of each of
// EventTypes, or, with AllEvents, of every subscribable kind (those the
// service adds later included). Emit reads it (webhook_event_types and
// webhooks.all_events) and queues each event once per registration that
// takes its kind.
type Subscription struct {
	EventTypes []string
	AllEvents  bool
}

// Kinds are the kinds the subscription takes now, in outbox.Kinds order.
func (s Subscription) Kinds() []string {
	if s.AllEvents {
		return slices.Clone(outbox.Kinds)
	}
	return s.EventTypes
}

// First is the kind the deprecated single event shows (webhooks.event):
// the first of Kinds.
func (s Subscription) First() string {
	if k := s.Kinds(); len(k) > 0 {
		return k[0]
	}
	return ""
}

// checkSubscription is the rule for what a registration subscribes to, at
// creation and at a change: every kind one of the subscribable ones
// (outbox.Kinds; webhook.test is sent only by a test, never subscribed
// to), at least one of them or all, and a token holding the read scope of
// every kind it takes (mayReadKind). It returns the subscription in
// outbox.Kinds order without repeats, or the message for the field the
// caller sent it in, or the refusal.
func checkSubscription(p *auth.Principal, sub Subscription) (norm Subscription, msg string, err error) {
	if sub.AllEvents {
		if len(sub.EventTypes) > 0 {
			return norm, "give event types or all events, not both", nil
		}
	} else {
		if len(sub.EventTypes) == 0 {
			return norm, "choose at least one event type, or all events", nil
		}
		for _, k := range sub.EventTypes {
			if !outbox.ValidKind(k) {
				return norm, fmt.Sprintf("must be one of %v", outbox.Kinds), nil
			}
		}
		for _, k := range outbox.Kinds {
			if slices.Contains(sub.EventTypes, k) {
				norm.EventTypes = append(norm.EventTypes, k)
			}
		}
	}
	norm.AllEvents = sub.AllEvents
	for _, k := range norm.Kinds() {
		if err := mayReadKind(p, k); err != nil {
			return Subscription{}, "", err
		}
	}
	return norm, "", nil
}

// writeSubscription replaces registration id's event types with sub's,
// inside tx (webhooks.event and all_events are the caller's to set).
func writeSubscription(ctx context.Context, tx *gorm.DB, id int64, sub Subscription) error {
	tid := tenant.ID(ctx)
	if err := tx.Exec("DELETE FROM webhook_event_types WHERE tenant_id = ? AND webhook_id = ?", tid, id).Error; err != nil {
		return fmt.Errorf("registry: clear the event types of webhook %d: %w", id, err)
	}
	if sub.AllEvents {
		return nil
	}
	rows := make([]map[string]any, len(sub.EventTypes))
	for i, k := range sub.EventTypes {
		rows[i] = map[string]any{"tenant_id": tid, "webhook_id": id, "kind": k}
	}
	if err := tx.Table("webhook_event_types").Create(rows).Error; err != nil {
		return fmt.Errorf("registry: write the event types of webhook %d: %w", id, err)
	}
	return nil
}

// withSubscriptions fills the Subscription of each of ws from q (the
// tenant's webhook_event_types), in one query.
func withSubscriptions(ctx context.Context, q *gorm.DB, ws []Webhook) error {
	if len(ws) == 0 {
		return nil
	}
	ids := make([]int64, len(ws))
	for i := range ws {
		ids[i] = ws[i].ID
	}
	var rows []struct {
		WebhookID int64
		Kind      string
	}
	if err := tenant.Scope(ctx, q.Table("webhook_event_types")).Select("webhook_id, kind").
		Where("webhook_id IN ?", ids).Scan(&rows).Error; err != nil {
		return fmt.Errorf("registry: read event types: %w", err)
	}
	byID := map[int64][]string{}
	for _, r := range rows {
		byID[r.WebhookID] = append(byID[r.WebhookID], r.Kind)
	}
	for i := range ws {
		w := &ws[i]
		w.EventTypes = nil
		if !w.AllEvents {
			for _, k := range outbox.Kinds {
				if slices.Contains(byID[w.ID], k) {
					w.EventTypes = append(w.EventTypes, k)
				}
			}
		}
	}
	return nil
}
