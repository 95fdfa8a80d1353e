package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/web"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
)

// EventType is an event kind a registration may subscribe to, as the
// create form offers it (internal/app reads the catalog from the spec's
// callbacks, the one place events are described).
type EventType struct {
	Name        string
	Description string // one sentence
	// Example is the data object of the catalog's example of this type
	// (the callback's example envelope), which a test of that type sends;
	// nil: the type cannot be chosen for a test.
	Example json.RawMessage
}

// eventTypes are the subscribable kinds, with the catalog's description
// where it has one.
func (cs *Console) eventTypes() []EventType {
	out := make([]EventType, 0, len(outbox.Kinds))
	for _, k := range outbox.Kinds {
		et := EventType{Name: k}
		for _, d := range cs.d.EventTypes {
			if d.Name == k {
				et.Description, et.Example = d.Description, d.Example
			}
		}
		out = append(out, et)
	}
	return out
}

// newWebhookPage is the create form, with what was sent when refused.
type newWebhookPage struct {
	Events        []EventType
	Event, Target string
	Errors        fieldErrors
}

// eventChoice is the event a form chooses, among the catalog's types
// (template "event-choice", on the create form and the registration's
// edit form): Prefix keeps its element ids apart from the page's others.
type eventChoice struct {
	Prefix string
	Events []EventType
	Event  string
	Error  string
}

// EventChoice is the create form's event field.
func (p *newWebhookPage) EventChoice() eventChoice {
	return eventChoice{Events: p.Events, Event: p.Event, Error: p.Errors["event"]}
}

// fieldErrors is one sentence per refused field, shown beside it.
type fieldErrors map[string]string

// fieldsOf turns a refusal's field messages into one sentence per field
// (its first message, as a sentence); the rest of the refusal is the
// page's banner. Unlike web.FieldErrors it does not prefix the field's
// label: these forms' messages are written to stand beside their field.
func fieldsOf(err error) fieldErrors {
	var ae *apperr.Error
	if !errors.As(err, &ae) || len(ae.Fields) == 0 {
		return nil
	}
	fe := fieldErrors{}
	for f, msgs := range ae.Fields {
		if len(msgs) > 0 {
			fe[f] = web.Sentence(msgs[0])
		}
	}
	return fe
}

func (cs *Console) newWebhook(r *req) error {
	if err := cs.permitOr403(r, auth.OpCreateWebhook); err != nil {
		return err
	}
	return cs.newWebhookView(r, "", &newWebhookPage{Event: r.QueryParam("event")})
}

func (cs *Console) newWebhookView(r *req, msg string, p *newWebhookPage) error {
	p.Events = cs.eventTypes()
	if p.Event == "" && len(p.Events) > 0 {
		p.Event = p.Events[0].Name
	}
	return cs.show(r, "webhook-new", &view{Layout: web.Layout{Title: "New webhook", Nav: "webhooks", Message: msg}, Page: p})
}

// createWebhook registers a webhook as the signed-in user (a member's is
// theirs alone) and shows its secret once.
func (cs *Console) createWebhook(r *req) error {
	if err := cs.permitOr403(r, auth.OpCreateWebhook); err != nil {
		return err
	}
	event, target := r.Request().PostFormValue("event"), r.Request().PostFormValue("target")
	w, secret, err := cs.d.Webhooks.Create(r.Request().Context(), r.p, event, target)
	if apperr.Is(err, apperr.Invalid) {
		return cs.newWebhookView(r, "The webhook was not created: correct the fields marked below.",
			&newWebhookPage{Event: event, Target: target, Errors: fieldsOf(err)})
	}
	if err != nil {
		return err
	}
	return cs.done(r, webhookPath(w.ID), flash{Secret: secret,
		Notice: fmt.Sprintf("Webhook %d was created: %s events go to %s. Copy its signing secret now; it verifies every delivery.", w.ID, w.Event, w.Target)})
}

// changeTarget changes a registration's event and target (the API's PATCH
// event and target) from its edit form.
func (cs *Console) changeTarget(r *req) error {
	id, err := idParam(r.Context, "id")
	if err != nil {
		return err
	}
	if err := cs.permitOr403(r, auth.OpUpdateWebhook); err != nil {
		return err
	}
	event, target := r.Request().PostFormValue("event"), r.Request().PostFormValue("target")
	ch := registry.Patch{Target: &target}
	if event != "" { // a form without the field keeps the event
		ch.Event = &event
	}
	w, err := cs.d.Webhooks.Update(r.Request().Context(), r.p, id, ch)
	if apperr.Is(err, apperr.Invalid) {
		return cs.webhookForm(r, "The webhook was not changed: correct the fields marked below.", edit{Event: event, Target: target}, fieldsOf(err))
	}
	if err != nil {
		return err
	}
	return cs.done(r, webhookPath(id), flash{Notice: fmt.Sprintf("Webhook %d now receives %s events at %s.", id, w.Event, w.Target)})
}

// replayWindows are the "replay all failed since …" choices.
var replayWindows = []struct {
	Value, Label string
	D            time.Duration
}{
	{"1h", "the last hour", time.Hour},
	{"24h", "the last 24 hours", 24 * time.Hour},
	{"168h", "the last 7 days", 7 * 24 * time.Hour},
}

// replayFailed queues again the registration's failed deliveries of the
// chosen window.
func (cs *Console) replayFailed(r *req) error {
	id, err := idParam(r.Context, "id")
	if err != nil {
		return err
	}
	if err := cs.permitOr403(r, auth.OpRedeliverWebhookDelivery); err != nil {
		return err
	}
	var window time.Duration
	label := ""
	for _, w := range replayWindows {
		if w.Value == r.Request().PostFormValue("since") {
			window, label = w.D, w.Label
		}
	}
	if window == 0 {
		return cs.webhookView(r, "Choose how far back to replay.")
	}
	n, err := cs.d.Webhooks.ReplayFailed(r.Request().Context(), r.p, id, time.Now().Add(-window))
	if err != nil {
		return cs.refused(r, err)
	}
	msg := fmt.Sprintf("%d failed deliveries of %s were queued again.", n, label)
	switch n {
	case 0:
		msg = "No delivery failed in " + label + "; nothing was queued."
	case 1:
		msg = "1 failed delivery of " + label + " was queued again."
	}
	return cs.done(r, webhookPath(id), flash{Notice: msg})
}
