package webui

import (
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/web"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
)

// webhookRow is a registration as the pages show it.
type webhookRow struct {
	registry.Webhook
	Health outbox.HealthState
}

type webhooksPage struct {
	Rows     []webhookRow
	Pager    pager
	CanWrite bool
	Own      bool // the list holds only the caller's registrations (members)
}

type webhookPage struct {
	W          webhookRow
	Deliveries []registry.Delivery
	Pager      pager
	CanWrite   bool
	CanDelete  bool
	Now        time.Time
}

func row(w registry.Webhook) webhookRow {
	return webhookRow{Webhook: w, Health: w.HealthState(time.Now())}
}

func webhookPath(id int64) string { return fmt.Sprintf("/console/webhooks/%d", id) }

// webhooks is the list of the registrations the user may see (a member:
// the ones they created; registry.List decides).
func (cs *Console) webhooks(r *req) error {
	pg := pageRequest(r.Context)
	ws, total, err := cs.d.Webhooks.List(r.Request().Context(), r.p, pg)
	if err != nil {
		return err
	}
	p := &webhooksPage{Pager: newPager(pg, total), CanWrite: r.permit("updateWebhook"), Own: registry.OwnOnly(r.p)}
	for _, w := range ws {
		p.Rows = append(p.Rows, row(w))
	}
	return cs.show(r, "webhooks", &view{Layout: web.Layout{Title: "Webhooks", Nav: "webhooks"}, Page: p})
}

// webhook is one registration and its delivery log, newest first.
func (cs *Console) webhook(r *req) error {
	return cs.webhookView(r, "")
}

func (cs *Console) webhookView(r *req, msg string) error {
	id, err := idParam(r.Context, "id")
	if err != nil {
		return err
	}
	ctx := r.Request().Context()
	w, err := cs.d.Webhooks.Get(ctx, r.p, id)
	if err != nil {
		return err
	}
	pg := pageRequest(r.Context)
	ds, total, err := cs.d.Webhooks.Deliveries(ctx, r.p, id, pg)
	if err != nil {
		return err
	}
	p := &webhookPage{W: row(*w), Deliveries: ds, Pager: newPager(pg, total),
		CanWrite: r.permit("updateWebhook"), CanDelete: r.permit("deleteWebhook"), Now: time.Now()}
	return cs.show(r, "webhook", &view{Layout: web.Layout{Title: fmt.Sprintf("Webhook %d", id), Nav: "webhooks", Message: msg}, Page: p})
}

// refused shows a refusal the user can act on (400: inactive, in flight,
// bad input) on the registration's page; other errors are pages of their
// own (handle).
func (cs *Console) refused(r *req, err error) error {
	if apperr.Is(err, apperr.Invalid) || apperr.Is(err, apperr.Unprocessable) || apperr.Is(err, apperr.Conflict) {
		return cs.webhookView(r, describe(err))
	}
	return err
}

func (cs *Console) testWebhook(r *req) error {
	id, err := idParam(r.Context, "id")
	if err != nil {
		return err
	}
	if err := cs.permitOr403(r, "testWebhook"); err != nil {
		return err
	}
	d, err := cs.d.Webhooks.Test(r.Request().Context(), r.p, id)
	if err != nil {
		return cs.refused(r, err)
	}
	return cs.done(r, webhookPath(id), flash{Notice: "A test event was queued (delivery " + d.ID + ")."})
}

func (cs *Console) rotateWebhook(r *req) error {
	id, err := idParam(r.Context, "id")
	if err != nil {
		return err
	}
	if err := cs.permitOr403(r, "rotateWebhookSecret"); err != nil {
		return err
	}
	_, secret, err := cs.d.Webhooks.Rotate(r.Request().Context(), r.p, id)
	if err != nil {
		return cs.refused(r, err)
	}
	return cs.done(r, webhookPath(id), flash{Secret: secret,
		Notice: fmt.Sprintf("The signing secret was rotated. The previous one keeps signing for %d hours.", int(registry.RotationOverlap.Hours()))})
}

func (cs *Console) setActive(active bool) handler {
	return func(r *req) error {
		id, err := idParam(r.Context, "id")
		if err != nil {
			return err
		}
		if err := cs.permitOr403(r, "updateWebhook"); err != nil {
			return err
		}
		if _, err := cs.d.Webhooks.Update(r.Request().Context(), r.p, id, nil, &active); err != nil {
			return cs.refused(r, err)
		}
		notice := "The registration was disabled; its pending deliveries were cancelled."
		if active {
			notice = "The registration is active again."
		}
		return cs.done(r, webhookPath(id), flash{Notice: notice})
	}
}

func (cs *Console) deleteWebhook(r *req) error {
	id, err := idParam(r.Context, "id")
	if err != nil {
		return err
	}
	if err := cs.permitOr403(r, "deleteWebhook"); err != nil {
		return err
	}
	if err := cs.d.Webhooks.Delete(r.Request().Context(), r.p, id); err != nil {
		return cs.refused(r, err)
	}
	return cs.done(r, "/console/webhooks", flash{Notice: fmt.Sprintf("Webhook %d was deleted.", id)})
}

func (cs *Console) redeliver(r *req) error {
	id, err := idParam(r.Context, "id")
	if err != nil {
		return err
	}
	did, err := uuid.Parse(r.Param("delivery"))
	if err != nil {
		return apperr.E(apperr.NotFound, "no such delivery")
	}
	if err := cs.permitOr403(r, "redeliverWebhookDelivery"); err != nil {
		return err
	}
	if _, err := cs.d.Webhooks.Redeliver(r.Request().Context(), r.p, id, did); err != nil {
		return cs.refused(r, err)
	}
	return cs.done(r, webhookPath(id), flash{Notice: "Delivery " + did.String() + " was queued again."})
}

// permitOr403 is the policy's role rule for the operation; the registry
// asks the policy too, this names the refusal on the page.
func (cs *Console) permitOr403(r *req, operationID string) error {
	if !r.permit(operationID) {
		return apperr.E(apperr.Forbidden, "Your role ("+r.user.Role+") cannot do this.")
	}
	return nil
}
