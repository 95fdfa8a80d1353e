package httpapi

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
)

// Webhook registrations and the delivery log. Reading needs webhooks:read;
// changing needs webhooks:write and a member or admin (authorize.go). Which
// registrations a caller sees and manages is the registry's rule (a member
// only its own): every call passes the caller.

func utcp(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func webhookView(w *registry.Webhook) models.Webhook {
	kinds := w.Subscription().Kinds()
	types := make([]models.EventKind, len(kinds))
	for i, k := range kinds {
		types[i] = models.EventKind(k)
	}
	return models.Webhook{
		Id: w.ID, Event: models.EventKind(w.Event), EventTypes: types, AllEvents: w.AllEvents, Description: w.Description, Target: w.Target, Active: w.Active,
		CreatedByUserId: w.CreatedByUserID, CreatedByClientId: w.CreatedByClientID,
		DisabledReason: w.DisabledReason, DisabledAt: utcp(w.DisabledAt), Health: healthView(w),
		CreatedAt: w.CreatedAt.UTC(), UpdatedAt: w.UpdatedAt.UTC(), PreviousSecretExpiresAt: w.Overlap(time.Now()),
	}
}

func healthView(w *registry.Webhook) models.WebhookHealth {
	h := models.WebhookHealth{
		State:               models.WebhookHealthState(w.HealthState(time.Now())),
		ConsecutiveFailures: w.ConsecutiveFailures,
		LastSuccessAt:       utcp(w.LastSuccessAt), LastFailureAt: utcp(w.LastFailureAt),
		LastFailureReason: w.LastFailureReason, FailingSince: utcp(w.FailingSince),
	}
	if h.State == models.WebhookHealthBackingOff {
		h.BackingOffUntil = utcp(w.CircuitOpenUntil)
	}
	return h
}

func webhookWithSecret(w *registry.Webhook, secret string) models.WebhookWithSecret {
	v := webhookView(w)
	out := models.WebhookWithSecret{
		Id: v.Id, Event: v.Event, EventTypes: v.EventTypes, AllEvents: v.AllEvents, Description: v.Description, Target: v.Target, Active: v.Active,
		CreatedByUserId: v.CreatedByUserId, CreatedByClientId: v.CreatedByClientId,
		DisabledReason: v.DisabledReason, DisabledAt: v.DisabledAt, Health: v.Health,
		CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt, Secret: secret,
	}
	if w.PreviousSecretExpiresAt != nil {
		t := w.PreviousSecretExpiresAt.UTC()
		out.PreviousSecretExpiresAt = &t
	}
	return out
}

func deliveryView(d *registry.Delivery) (models.Delivery, error) {
	id, err := uuid.Parse(d.ID)
	if err != nil {
		return models.Delivery{}, fmt.Errorf("delivery id %q: %w", d.ID, err)
	}
	ev, err := uuid.Parse(d.EventID)
	if err != nil {
		return models.Delivery{}, fmt.Errorf("event id %q: %w", d.EventID, err)
	}
	return models.Delivery{
		Id: id, WebhookId: d.WebhookID, EventId: ev, Event: models.DeliveryEventKind(d.Event),
		Status: models.DeliveryStatus(d.Status), Attempts: d.Attempts,
		LastStatusCode: d.LastStatusCode, LastError: d.LastError, ResponseExcerpt: d.ResponseExcerpt,
		LastAttemptAt: utcp(d.LastAttemptAt), NextAttemptAt: utcp(d.NextAttemptAt), CreatedAt: d.CreatedAt.UTC(),
	}, nil
}

// subscriptionOf reads what a registration subscribes to from a body's
// event (deprecated), event_types and all_events, at most one of them (nil:
// none given), with the field it came in, for the registry's refusals.
func subscriptionOf(event *models.EventKind, types *[]models.EventKind, all *bool) (*registry.Subscription, string, error) {
	given := 0
	var sub registry.Subscription
	field := "event_types"
	if event != nil {
		given++
		sub.EventTypes, field = []string{string(*event)}, "event"
	}
	if types != nil {
		given++
		for _, k := range *types {
			sub.EventTypes = append(sub.EventTypes, string(k))
		}
	}
	if all != nil {
		if !*all && given == 0 {
			return nil, "", apperr.E(apperr.Invalid, "The webhook registration is invalid.").
				WithField("all_events", "false subscribes to nothing: give event_types instead")
		}
		if *all {
			given++
			sub.AllEvents, field = true, "all_events"
		}
	}
	switch given {
	case 0:
		return nil, "", nil
	case 1:
		return &sub, field, nil
	}
	return nil, "", apperr.E(apperr.Invalid, "The webhook registration is invalid.").
		WithField("event_types", "give one of event_types, all_events: true or event")
}

// ListWebhooks is GET /webhooks.
func (h *Handlers) ListWebhooks(ctx context.Context, req apiserver.ListWebhooksRequestObject) (apiserver.ListWebhooksResponseObject, error) {
	pg, err := page.New(req.Params.Page, req.Params.Limit)
	if err != nil {
		return nil, err
	}
	ws, total, err := h.svc.Webhooks.List(ctx, auth.MustFromContext(ctx), pg)
	if err != nil {
		return nil, err
	}
	out := apiserver.ListWebhooks200JSONResponse{Data: make([]models.Webhook, 0, len(ws)),
		Meta: pageMeta(pg, total)}
	for i := range ws {
		out.Data = append(out.Data, webhookView(&ws[i]))
	}
	return out, nil
}

// CreateWebhook is POST /webhooks.
func (h *Handlers) CreateWebhook(ctx context.Context, req apiserver.CreateWebhookRequestObject) (apiserver.CreateWebhookResponseObject, error) {
	p := auth.MustFromContext(ctx)
	if req.Body == nil {
		return nil, apperr.E(apperr.Invalid, "A JSON body is required.")
	}
	sub, field, err := subscriptionOf(req.Body.Event, req.Body.EventTypes, req.Body.AllEvents)
	if err != nil {
		return nil, err
	}
	if sub == nil {
		return nil, apperr.E(apperr.Invalid, "The webhook registration is invalid.").
			WithField("event_types", "choose at least one event type, or all events")
	}
	r := registry.Registration{Target: req.Body.Target, Subscription: *sub, EventField: field}
	if req.Body.Description != nil {
		r.Description = *req.Body.Description
	}
	w, secret, err := h.svc.Webhooks.Register(ctx, p, r)
	if err != nil {
		return nil, err
	}
	return apiserver.CreateWebhook201JSONResponse(webhookWithSecret(w, secret)), nil
}

// GetWebhook is GET /webhooks/{id}.
func (h *Handlers) GetWebhook(ctx context.Context, req apiserver.GetWebhookRequestObject) (apiserver.GetWebhookResponseObject, error) {
	w, err := h.svc.Webhooks.Get(ctx, auth.MustFromContext(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiserver.GetWebhook200JSONResponse(webhookView(w)), nil
}

// UpdateWebhook is PATCH /webhooks/{id}.
func (h *Handlers) UpdateWebhook(ctx context.Context, req apiserver.UpdateWebhookRequestObject) (apiserver.UpdateWebhookResponseObject, error) {
	b := req.Body
	if b == nil || (b.Event == nil && b.EventTypes == nil && b.AllEvents == nil && b.Target == nil && b.Description == nil && b.Active == nil) {
		return nil, apperr.E(apperr.Invalid, "Give event_types or all_events, target, description and/or active.")
	}
	ch := registry.Patch{Target: b.Target, Description: b.Description, Active: b.Active}
	sub, field, err := subscriptionOf(b.Event, b.EventTypes, b.AllEvents)
	if err != nil {
		return nil, err
	}
	if sub != nil {
		ch.Subscription, ch.SubscriptionField = sub, field
	}
	w, err := h.svc.Webhooks.Update(ctx, auth.MustFromContext(ctx), req.Id, ch)
	if err != nil {
		return nil, err
	}
	return apiserver.UpdateWebhook200JSONResponse(webhookView(w)), nil
}

// DeleteWebhook is DELETE /webhooks/{id}.
func (h *Handlers) DeleteWebhook(ctx context.Context, req apiserver.DeleteWebhookRequestObject) (apiserver.DeleteWebhookResponseObject, error) {
	if err := h.svc.Webhooks.Delete(ctx, auth.MustFromContext(ctx), req.Id); err != nil {
		return nil, err
	}
	return apiserver.DeleteWebhook204Response{}, nil
}

// RotateWebhookSecret is POST /webhooks/{id}/rotate-secret.
// Without a body (or without previous_secret_expires_in) the overlap is
// the default; the spec's enum has already refused any other number.
func (h *Handlers) RotateWebhookSecret(ctx context.Context, req apiserver.RotateWebhookSecretRequestObject) (apiserver.RotateWebhookSecretResponseObject, error) {
	overlap := registry.DefaultRotationOverlap
	if req.Body != nil && req.Body.PreviousSecretExpiresIn != nil {
		overlap = time.Duration(*req.Body.PreviousSecretExpiresIn) * time.Second
	}
	w, secret, err := h.svc.Webhooks.Rotate(ctx, auth.MustFromContext(ctx), req.Id, overlap)
	if err != nil {
		return nil, err
	}
	return apiserver.RotateWebhookSecret200JSONResponse(webhookWithSecret(w, secret)), nil
}

// ListWebhookDeliveries is GET /webhooks/{id}/deliveries.
func (h *Handlers) ListWebhookDeliveries(ctx context.Context, req apiserver.ListWebhookDeliveriesRequestObject) (apiserver.ListWebhookDeliveriesResponseObject, error) {
	pg, err := page.New(req.Params.Page, req.Params.Limit)
	if err != nil {
		return nil, err
	}
	ds, total, err := h.svc.Webhooks.Deliveries(ctx, auth.MustFromContext(ctx), req.Id, pg)
	if err != nil {
		return nil, err
	}
	out := apiserver.ListWebhookDeliveries200JSONResponse{Data: make([]models.Delivery, 0, len(ds)),
		Meta: pageMeta(pg, total)}
	for i := range ds {
		v, err := deliveryView(&ds[i])
		if err != nil {
			return nil, err
		}
		out.Data = append(out.Data, v)
	}
	return out, nil
}

// RedeliverWebhookDelivery is POST /webhooks/{id}/deliveries/{delivery_id}/redeliver.
func (h *Handlers) RedeliverWebhookDelivery(ctx context.Context, req apiserver.RedeliverWebhookDeliveryRequestObject) (apiserver.RedeliverWebhookDeliveryResponseObject, error) {
	d, err := h.svc.Webhooks.Redeliver(ctx, auth.MustFromContext(ctx), req.Id, req.DeliveryId)
	if err != nil {
		return nil, err
	}
	v, err := deliveryView(d)
	if err != nil {
		return nil, err
	}
	return apiserver.RedeliverWebhookDelivery202JSONResponse(v), nil
}
