package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
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
	Rows      []webhookRow
	Pager     pager
	CanWrite  bool
	CanCreate bool
	Own       bool // the list holds only the caller's registrations (members)
}

type webhookPage struct {
	W webhookRow
	// The edit form (event and target) as sent, and its fields' refusals.
	Errors     fieldErrors
	Edit       edit
	EventTypes []EventType
	Deliveries []registry.Delivery
	// The log's filter as typed, its choices, and the cursor links.
	Filter    logFilter
	Statuses  []outbox.Status
	Events    []string
	Log       logPage
	CanWrite  bool
	CanTest   bool
	CanDelete bool
	CanReveal bool
	Now       time.Time
	Replay    []replayChoice
	Tests     []testChoice
	Health    *healthView
	Breaker   breaker
}

type replayChoice struct{ Value, Label string }

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
	p := &webhooksPage{Pager: newPager(pg, total), CanWrite: r.permit(auth.OpUpdateWebhook), CanCreate: r.permit(auth.OpCreateWebhook), Own: registry.OwnOnly(r.p)}
	for _, w := range ws {
		p.Rows = append(p.Rows, row(w))
	}
	return cs.show(r, "webhooks", &view{Layout: web.Layout{Title: "Webhooks", Nav: "webhooks"}, Page: p})
}

// webhook is one registration and its delivery log, newest first.
func (cs *Console) webhook(r *req) error {
	return cs.webhookView(r, "")
}

// edit is the registration's edit form as sent; "" (nil) is the
// registration's own value.
type edit struct {
	Sub         *registry.Subscription
	Target      string
	Description *string
	Errors      fieldErrors // the refusals, for the shared fields' templates
}

// EventChoice is the edit form's event field, the current types chosen.
func (p *webhookPage) EventChoice() eventChoice {
	return eventChoice{Prefix: "edit-", Events: p.EventTypes, Sub: *p.Edit.Sub, Error: p.Errors["event"]}
}

// Events is what the registration subscribes to, in a few words.
func (w webhookRow) Events() string { return summary(w.Subscription()) }

func (cs *Console) webhookView(r *req, msg string) error {
	return cs.webhookForm(r, msg, edit{}, nil)
}

// webhookForm is the registration's page with a refusal: msg in the banner,
// and the edit form as sent with its fields' sentences.
func (cs *Console) webhookForm(r *req, msg string, sent edit, fe fieldErrors) error {
	id, err := idParam(r.Context, "id")
	if err != nil {
		return err
	}
	ctx := r.Request().Context()
	w, err := cs.d.Webhooks.Get(ctx, r.p, id)
	if err != nil {
		return err
	}
	if sent.Target == "" {
		sent.Target = w.Target
	}
	if sent.Sub == nil {
		sub := w.Subscription()
		sent.Sub = &sub
	}
	if sent.Description == nil {
		sent.Description = &w.Description
	}
	sent.Errors = fe
	var choices []replayChoice
	for _, c := range replayWindows {
		choices = append(choices, replayChoice{c.Value, c.Label})
	}
	now := time.Now()
	p := &webhookPage{W: row(*w), Edit: sent, EventTypes: cs.eventTypes(), Errors: fe, Replay: choices, Statuses: outbox.Statuses,
		CanWrite: r.permit(auth.OpUpdateWebhook), CanTest: r.permit(auth.OpTestWebhook), CanDelete: r.permit(auth.OpDeleteWebhook), CanReveal: r.permit(auth.OpRotateWebhookSecret), Now: now,
		Tests: cs.testChoices(), Breaker: breakerOf(*w, now)}
	p.Events = append([]string{outbox.WebhookTest}, outbox.Kinds...)
	// The log: filtered as the query asks; a refused filter lists
	// nothing and says why beside its field. A form posted to this page
	// (a refusal) shows the whole log.
	q := r.QueryParams()
	if r.Request().Method != http.MethodGet {
		q = url.Values{}
	}
	lf, f := readFilter(q)
	p.Filter = lf
	if len(lf.Errors) == 0 {
		ds, more, err := cs.d.Webhooks.FindDeliveries(ctx, r.p, id, f)
		switch {
		case apperr.Is(err, apperr.Invalid):
			// A cursor that names no delivery of this log (purged, or
			// typed by hand).
			p.Filter.Errors["page"] = "This page link is broken; start again from the newest deliveries."
		case err != nil:
			return err
		default:
			p.Deliveries, p.Log = ds, cursorLinks(lf, f, ds, more)
		}
	}
	if msg == "" && len(p.Filter.Errors) > 0 {
		msg = refusedFilter(p.Filter)
	}
	h, err := cs.d.Webhooks.AttemptHealth(ctx, r.p, id, now)
	if err != nil {
		return err
	}
	p.Health = newHealthView(h)
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
	if err := cs.permitOr403(r, auth.OpTestWebhook); err != nil {
		return err
	}
	// The chosen type's example from the catalog; webhook.test (the
	// default, also when none is chosen) sends the standard message.
	kind := r.Request().PostFormValue("event")
	if kind == "" {
		kind = outbox.WebhookTest
	}
	d, err := cs.d.Webhooks.TestExample(r.Request().Context(), r.p, id, kind, cs.example(kind))
	if err != nil {
		return cs.refused(r, err)
	}
	return cs.done(r, webhookPath(id), flash{Notice: "A test event was queued (" + d.Event + ", delivery " + d.ID + ")."})
}

func (cs *Console) rotateWebhook(r *req) error {
	id, err := idParam(r.Context, "id")
	if err != nil {
		return err
	}
	if err := cs.permitOr403(r, auth.OpRotateWebhookSecret); err != nil {
		return err
	}
	// A form without the choice (a page from before it was offered)
	// rotates with the default; an unknown value is refused by the
	// registry.
	overlap := registry.DefaultRotationOverlap
	if v := r.Request().PostFormValue("overlap"); v != "" {
		c, ok := overlapChoiceOf(v)
		if !ok {
			return cs.webhookView(r, "Choose how long the previous secret keeps signing: now, 24 hours or 7 days.")
		}
		overlap = c.d
	}
	_, secret, err := cs.d.Webhooks.Rotate(r.Request().Context(), r.p, id, overlap)
	if err != nil {
		return cs.refused(r, err)
	}
	c, _ := overlapChoiceFor(overlap)
	return cs.done(r, webhookPath(id), flash{Secret: secret, Notice: "The signing secret was rotated. " + c.done})
}

// endOverlap is "End the overlap now": the previous secret of a rotation
// stops signing at once (as for apps on the developer pages).
func (cs *Console) endOverlap(r *req) error {
	id, err := idParam(r.Context, "id")
	if err != nil {
		return err
	}
	if err := cs.permitOr403(r, auth.OpRotateWebhookSecret); err != nil {
		return err
	}
	if _, err := cs.d.Webhooks.EndOverlap(r.Request().Context(), r.p, id); err != nil {
		return cs.refused(r, err)
	}
	return cs.done(r, webhookPath(id), flash{Notice: "The previous signing secret no longer signs; only the current one does."})
}

// overlapChoice is an overlap of a rotation as the confirmation page
// offers it.
type overlapChoice struct {
	value, label string
	d            time.Duration
	effect, done string // what choosing it does; what it did
}

// overlapChoices offer each of registry.RotationOverlaps (the registry
// refuses any other).
var overlapChoices = []overlapChoice{
	{"now", "Now", registry.OverlapNone,
		"Only the new secret signs from now on: the receiver rejects every delivery until it has the new secret. For a secret that leaked.",
		"The previous one no longer signs."},
	{"24h", "After 24 hours", registry.OverlapDay,
		"For 24 hours every delivery carries signatures by both secrets; after that only the new one signs, so the receiver must have it by then.",
		"The previous one keeps signing for 24 hours."},
	{"7d", "After 7 days", registry.OverlapWeek,
		"For 7 days every delivery carries signatures by both secrets; after that only the new one signs, so the receiver must have it by then.",
		"The previous one keeps signing for 7 days."},
}

func overlapChoiceOf(value string) (overlapChoice, bool) {
	for _, c := range overlapChoices {
		if c.value == value {
			return c, true
		}
	}
	return overlapChoice{}, false
}

func overlapChoiceFor(d time.Duration) (overlapChoice, bool) {
	for _, c := range overlapChoices {
		if c.d == d {
			return c, true
		}
	}
	return overlapChoice{}, false
}

func (cs *Console) setActive(active bool) handler {
	return func(r *req) error {
		id, err := idParam(r.Context, "id")
		if err != nil {
			return err
		}
		if err := cs.permitOr403(r, auth.OpUpdateWebhook); err != nil {
			return err
		}
		if _, err := cs.d.Webhooks.Update(r.Request().Context(), r.p, id, registry.Patch{Active: &active}); err != nil {
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
	if err := cs.permitOr403(r, auth.OpDeleteWebhook); err != nil {
		return err
	}
	if err := cs.d.Webhooks.Delete(r.Request().Context(), r.p, id); err != nil {
		return cs.refused(r, err)
	}
	return cs.done(r, "/console/webhooks", flash{Notice: fmt.Sprintf("Webhook %d was deleted.", id)})
}

// delivery is one delivery: its event, payload and every attempt.
func (cs *Console) delivery(r *req) error {
	id, err := idParam(r.Context, "id")
	if err != nil {
		return err
	}
	did, err := uuid.Parse(r.Param("delivery"))
	if err != nil {
		return apperr.E(apperr.NotFound, "no such delivery")
	}
	d, err := cs.d.Webhooks.DeliveryDetail(r.Request().Context(), r.p, id, did)
	if err != nil {
		return err
	}
	p := &deliveryPage{WebhookID: id, D: d, CanWrite: r.permit(auth.OpRedeliverWebhookDelivery), Payload: indent(d.Payload)}
	if n := len(d.Attempts); n > 0 {
		p.LastN = d.Attempts[n-1].N
	}
	return cs.show(r, "delivery", &view{Layout: web.Layout{Title: "Delivery " + d.ID, Nav: "webhooks"}, Page: p})
}

type deliveryPage struct {
	WebhookID int64
	D         *registry.DeliveryDetail
	Payload   string
	CanWrite  bool
	// LastN is the latest attempt's number (its headers are shown open).
	LastN int
}

func deliveryPath(webhookID int64, id string) string {
	return fmt.Sprintf("/console/webhooks/%d/deliveries/%s", webhookID, id)
}

// indent pretty-prints a stored JSON payload (as stored when it is not JSON).
func indent(s string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(s), "", "  ") != nil {
		return s
	}
	return b.String()
}

// askDelete names what deleting a registration takes with it.
func (cs *Console) askDelete(r *req) (*web.Confirmation, error) {
	w, pending, err := cs.askWebhook(r, auth.OpDeleteWebhook)
	if err != nil {
		return nil, err
	}
	return &web.Confirmation{
		Title: fmt.Sprintf("Delete webhook %d?", w.ID), Button: "Delete the webhook", Danger: true, Cancel: webhookPath(w.ID),
		Effects: []string{
			fmt.Sprintf("%s will no longer receive %s events.", w.Target, w.Event),
			pendingEffect(pending),
			"Its delivery log and every recorded attempt are deleted; this cannot be undone.",
		},
	}, nil
}

// askDisable names what disabling a registration cancels.
func (cs *Console) askDisable(r *req) (*web.Confirmation, error) {
	w, pending, err := cs.askWebhook(r, auth.OpUpdateWebhook)
	if err != nil {
		return nil, err
	}
	return &web.Confirmation{
		Title: fmt.Sprintf("Disable webhook %d?", w.ID), Button: "Disable the webhook", Danger: true, Cancel: webhookPath(w.ID),
		Effects: []string{
			fmt.Sprintf("%s will receive no %s events until it is enabled again; events meanwhile are not sent later.", w.Target, w.Event),
			pendingEffect(pending),
		},
	}, nil
}

// askRotate says what rotating the secret means for the receiver, and
// offers the overlap (the default chosen).
func (cs *Console) askRotate(r *req) (*web.Confirmation, error) {
	w, _, err := cs.askWebhook(r, auth.OpRotateWebhookSecret)
	if err != nil {
		return nil, err
	}
	g := &web.ChoiceGroup{Name: "overlap", Legend: "When does the previous secret stop signing?"}
	for _, c := range overlapChoices {
		g.Options = append(g.Options, web.Choice{Value: c.value, Label: c.label, Effect: c.effect, Checked: c.d == registry.DefaultRotationOverlap})
	}
	return &web.Confirmation{
		Title: fmt.Sprintf("Rotate the signing secret of webhook %d?", w.ID), Button: "Rotate the secret", Cancel: webhookPath(w.ID),
		Effects: []string{
			"A new secret is made and shown on the next page; later, an admin or the member who created the webhook can reveal it again with their password.",
			"Deliveries already queued are signed with the secrets valid when they are sent.",
		},
		Choice: g,
	}, nil
}

func pendingEffect(n int64) string {
	switch n {
	case 0:
		return "No deliveries are pending."
	case 1:
		return "1 pending delivery will be cancelled."
	}
	return fmt.Sprintf("%d pending deliveries will be cancelled.", n)
}

// askWebhook is the registration a confirmation is about, once the user
// may do operationID to it, and its pending deliveries.
func (cs *Console) askWebhook(r *req, operationID auth.Op) (*registry.Webhook, int64, error) {
	id, err := idParam(r.Context, "id")
	if err != nil {
		return nil, 0, err
	}
	if err := cs.permitOr403(r, operationID); err != nil {
		return nil, 0, err
	}
	ctx := r.Request().Context()
	w, err := cs.d.Webhooks.Get(ctx, r.p, id)
	if err != nil {
		return nil, 0, err
	}
	n, err := cs.d.Webhooks.PendingDeliveries(ctx, r.p, id)
	return w, n, err
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
	if err := cs.permitOr403(r, auth.OpRedeliverWebhookDelivery); err != nil {
		return err
	}
	if _, err := cs.d.Webhooks.Redeliver(r.Request().Context(), r.p, id, did); err != nil {
		return cs.refused(r, err)
	}
	return cs.done(r, deliveryPath(id, did.String()), flash{Notice: "Delivery " + did.String() + " was queued again; its earlier attempts stay listed."})
}

// permitOr403 is the policy's role rule for the operation; the registry
// asks the policy too, this names the refusal on the page.
func (cs *Console) permitOr403(r *req, operationID auth.Op) error {
	// The policy's own words for the refusal, as on the developer pages
	// (web.Forbidden).
	return r.pol.PermitRole(r.p, operationID)
}
