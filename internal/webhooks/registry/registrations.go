package registry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/finsvc/finsvc/internal/textinput"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/counts"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/pkg/webhooks/sign"
)

// Registration is a new registration: where deliveries go and what it
// subscribes to.
type Registration struct {
	Target string
	// Description is free text to tell endpoints apart (checkDescription).
	Description string
	Subscription
	// EventField names the field the subscription came in for a refusal
	// ("event_types" when empty; "event" for the deprecated single event).
	EventField string
}

// MaxDescriptionLen bounds a description, in characters (the spec says
// the same).
const MaxDescriptionLen = 500

// checkDescription is the rule for a description: text (textinput) of at
// most MaxDescriptionLen characters. It returns the field's message, or "".
func checkDescription(d string) string {
	switch {
	case !textinput.Valid(d):
		return textinput.Message
	case utf8.RuneCountInString(d) > MaxDescriptionLen:
		return fmt.Sprintf("must be at most %d characters", MaxDescriptionLen)
	}
	return ""
}

// Create registers target for event on behalf of p and returns the
// registration with its new secret, shown only now (Register with one
// event type).
func (s *Store) Create(ctx context.Context, p *auth.Principal, event, target string) (w *Webhook, secret string, err error) {
	return s.Register(ctx, p, Registration{Target: target, Subscription: Subscription{EventTypes: []string{event}}, EventField: "event"})
}

// Register registers r on behalf of p and returns the registration with
// its new secret, shown only now.
func (s *Store) Register(ctx context.Context, p *auth.Principal, r Registration) (w *Webhook, secret string, err error) {
	defer apperr.Wrap(&err, "registry.Register")
	if err := s.mayChange(p, auth.OpCreateWebhook); err != nil {
		return nil, "", err
	}
	fe := apperr.FieldErrors{}
	sub, msg, err := checkSubscription(p, r.Subscription)
	if err != nil {
		return nil, "", err
	}
	if msg != "" {
		fe.Add(cmp.Or(r.EventField, "event_types"), msg)
	}
	target, msg := s.checkTarget(ctx, r.Target)
	if msg != "" {
		fe.Add("target", msg)
	}
	if msg := checkDescription(r.Description); msg != "" {
		fe.Add("description", msg)
	}
	if err := fe.Err(apperr.Invalid, "The webhook registration is invalid."); err != nil {
		return nil, "", err
	}
	secret, err = sign.NewSecret()
	if err != nil {
		return nil, "", err
	}
	tid := tenant.ID(ctx)
	now := s.clock()
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		id, err := db.NextID(tx, tid, "webhooks")
		if err != nil {
			return err
		}
		ct, err := s.box.Seal(secret, sealing.AD(tid, id))
		if err != nil {
			return err
		}
		w = &Webhook{
			TenantID: tid, ID: id, Event: sub.First(), AllEvents: sub.AllEvents, Target: target, Description: r.Description, Active: true,
			SecretCiphertext: ct, CreatedByUserID: p.UserID,
			CreatedAt: now, UpdatedAt: now,
		}
		if p.ClientID != "" {
			c := p.ClientID
			w.CreatedByClientID = &c
		}
		if err := tx.Create(w).Error; err != nil {
			return err
		}
		if err := writeSubscription(ctx, tx, id, sub); err != nil {
			return err
		}
		w.EventTypes = sub.EventTypes
		return record(ctx, tx, p, audit.WebhookCreated, w.ID)
	})
	if err != nil {
		return nil, "", err
	}
	return w, secret, nil
}

// List returns a page of the registrations p may see, oldest first.
func (s *Store) List(ctx context.Context, p *auth.Principal, pg page.Request) (ws []Webhook, total int64, err error) {
	defer apperr.Wrap(&err, "registry.List")
	key := counts.Webhooks
	if uid, only := ownOnly(p); only {
		key = counts.WebhooksOf(uid) // the rows visible shows
	}
	if total, err = counts.Total(ctx, s.db.DB, key); err != nil {
		return nil, 0, err
	}
	if pg.Beyond(total) {
		return []Webhook{}, total, nil
	}
	if err = visible(ctx, s.db.DB, p).Order("id").Limit(pg.Limit).Offset(pg.Offset()).Find(&ws).Error; err != nil {
		return nil, 0, err
	}
	return ws, total, withSubscriptions(ctx, s.db.DB, ws)
}

// Get returns one registration; another tenant's, or one p may not see, is
// NotFound.
func (s *Store) Get(ctx context.Context, p *auth.Principal, id int64) (*Webhook, error) {
	return s.get(ctx, s.db.DB, p, id)
}

func (s *Store) get(ctx context.Context, q *gorm.DB, p *auth.Principal, id int64) (*Webhook, error) {
	var w Webhook
	err := visible(ctx, q, p).Where("id = ?", id).Take(&w).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.Ef(apperr.NotFound, "webhook %d not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("registry: get webhook %d: %w", id, err)
	}
	ws := []Webhook{w}
	if err := withSubscriptions(ctx, q, ws); err != nil {
		return nil, err
	}
	return &ws[0], nil
}

// Patch is a change of a registration: each field given (non-nil) is
// changed, the others are kept.
type Patch struct {
	// Subscription is what the registration subscribes to from now on,
	// checked as at creation. Deliveries already queued for kinds it no
	// longer takes are left as they are (delivered, retried or cancelled as
	// before): a change decides which events are queued for the
	// registration from now on.
	Subscription *Subscription
	// SubscriptionField names the field Subscription came in for a
	// refusal ("event_types" when empty).
	SubscriptionField string
	// Event is the deprecated single event: Subscription with this one
	// kind, refused under the name event.
	Event *string
	// Target is the new URL, checked and normalised as at creation.
	Target *string
	// Description replaces the description ("" clears it).
	Description *string
	// Active activates or deactivates the registration.
	Active *bool
}

// Update applies ch. Deactivating cancels the registration's pending
// deliveries; activating clears disabled_reason. A refused field changes
// nothing, and every refused field is named.
func (s *Store) Update(ctx context.Context, p *auth.Principal, id int64, ch Patch) (w *Webhook, err error) {
	defer apperr.Wrap(&err, "registry.Update(%d)", id)
	if err := s.mayChange(p, auth.OpUpdateWebhook); err != nil {
		return nil, err
	}
	target, active := ch.Target, ch.Active
	fe := apperr.FieldErrors{}
	sub, field := ch.Subscription, cmp.Or(ch.SubscriptionField, "event_types")
	if ch.Event != nil {
		sub, field = &Subscription{EventTypes: []string{*ch.Event}}, "event"
	}
	if sub != nil {
		norm, msg, err := checkSubscription(p, *sub)
		if err != nil {
			return nil, err
		}
		if msg != "" {
			fe.Add(field, msg)
		}
		sub = &norm
	}
	if target != nil {
		norm, msg := s.checkTarget(ctx, *target)
		if msg != "" {
			fe.Add("target", msg)
		}
		target = &norm
	}
	if ch.Description != nil {
		if msg := checkDescription(*ch.Description); msg != "" {
			fe.Add("description", msg)
		}
	}
	if err := fe.Err(apperr.Invalid, "The webhook registration is invalid."); err != nil {
		return nil, err
	}
	now := s.clock()
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := s.get(ctx, s.db.ForUpdate(tx), p, id)
		if err != nil {
			return err
		}
		set := map[string]any{"updated_at": now}
		if sub != nil {
			// Emit selects registrations by their subscription when it
			// writes an event, so events of the new kinds are queued from
			// the commit on; the deliveries already queued are left alone:
			// the attempts before each one check eligibility, not the kind.
			set["event"], set["all_events"] = sub.First(), sub.AllEvents
			if err := writeSubscription(ctx, tx, id, *sub); err != nil {
				return err
			}
		}
		if target != nil {
			set["target"] = *target
		}
		if ch.Description != nil {
			set["description"] = *ch.Description
		}
		if active != nil {
			set["active"] = *active
			if *active {
				// Re-enabling starts afresh: no disabled reason, and a
				// closed circuit with no failure run (or the next failure
				// would disable it again at once).
				set["disabled_reason"], set["disabled_at"] = nil, nil
				if !cur.Active {
					set["consecutive_failures"], set["failing_since"], set["circuit_open_until"] = 0, nil, nil
				}
			} else if cur.Active {
				if err := outbox.CancelPending(tx, tenant.ID(ctx), id, "", now); err != nil {
					return err
				}
			}
		}
		if err := tenant.Scope(ctx, tx.Model(&Webhook{})).Where("id = ?", id).Updates(set).Error; err != nil {
			return err
		}
		action := audit.WebhookUpdated
		if active != nil && !*active && cur.Active {
			action = audit.WebhookDisabled
		}
		if err := record(ctx, tx, p, action, id); err != nil {
			return err
		}
		w, err = s.get(ctx, tx, p, id)
		return err
	})
	return w, err
}

// Disable deactivates a registration whose target asked to stop (410
// Gone) or that has failed for outbox.AutoDisableAfter, records why and
// when, and cancels its pending deliveries, inside tx. The
// delivery workers call it across tenants, hence the explicit tenant id.
func Disable(tx *gorm.DB, tenantID, id int64, reason string, now time.Time) error {
	if err := tx.Table("webhooks").Where("tenant_id = ? AND id = ?", tenantID, id).
		Updates(map[string]any{"active": false, "disabled_reason": reason, "disabled_at": now, "updated_at": now}).Error; err != nil {
		return fmt.Errorf("registry: disable webhook %d: %w", id, err)
	}
	typ, target := audit.Target(audit.TargetWebhook, id)
	if err := audit.RecordIn(tx.Statement.Context, tx, tenantID, audit.Entry{
		Action: audit.WebhookDisabled, TargetType: typ, TargetID: target, Actor: audit.SystemActor,
	}); err != nil {
		return err
	}
	return outbox.CancelPending(tx, tenantID, id, "registration disabled: "+reason, now)
}

// Delete removes the registration. Its deliveries go with it (the delivery
// log belongs to the registration), which cancels every pending one.
func (s *Store) Delete(ctx context.Context, p *auth.Principal, id int64) (err error) {
	defer apperr.Wrap(&err, "registry.Delete(%d)", id)
	if err := s.mayChange(p, auth.OpDeleteWebhook); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *gorm.DB) error {
		if _, err := s.get(ctx, s.db.ForUpdate(tx), p, id); err != nil {
			return err
		}
		if err := outbox.DeleteDeliveries(tx, tenant.ID(ctx), id); err != nil {
			return err
		}
		res := tenant.Scope(ctx, tx).Where("id = ?", id).Delete(&Webhook{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return apperr.Ef(apperr.NotFound, "webhook %d not found", id)
		}
		return record(ctx, tx, p, audit.WebhookDeleted, id)
	})
}
