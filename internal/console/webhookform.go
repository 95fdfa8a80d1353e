package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
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
	Events              []EventType
	Sub                 registry.Subscription
	Target, Description string
	Errors              fieldErrors
}

// eventChoice is the event types a form chooses, among the catalog's types,
// or all of them (template "event-choice", on the create form and the
// registration's edit form): Prefix keeps its element ids apart from the
// page's others.
type eventChoice struct {
	Prefix string
	Events []EventType
	Sub    registry.Subscription
	Error  string
}

// Chosen reports whether the form has kind ticked.
func (c eventChoice) Chosen(kind string) bool { return slices.Contains(c.Sub.EventTypes, kind) }

// EventChoice is the create form's event field.
func (p *newWebhookPage) EventChoice() eventChoice {
	return eventChoice{Events: p.Events, Sub: p.Sub, Error: p.Errors["event"]}
}

// subscriptionForm reads an event-choice's answer: the ticked types (the
// field event, several values) or all events.
func subscriptionForm(r *req) registry.Subscription {
	f := r.Request().PostForm
	return registry.Subscription{EventTypes: f["event"], AllEvents: f.Get("all_events") == "true"}
}

// summary is what a registration subscribes to, in a few words.
func summary(s registry.Subscription) string {
	if s.AllEvents {
		return "all"
	}
	return strings.Join(s.EventTypes, ", ")
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
	p := &newWebhookPage{}
	if e := r.QueryParam("event"); e != "" {
		p.Sub.EventTypes = []string{e}
	}
	return cs.newWebhookView(r, "", p)
}

func (cs *Console) newWebhookView(r *req, msg string, p *newWebhookPage) error {
	p.Events = cs.eventTypes()
	return cs.show(r, "webhook-new", &view{Layout: web.Layout{Title: "New webhook", Nav: "webhooks", Message: msg}, Page: p})
}

// createWebhook registers a webhook as the signed-in user (a member's is
// theirs alone) and shows its secret once.
func (cs *Console) createWebhook(r *req) error {
	if err := cs.permitOr403(r, auth.OpCreateWebhook); err != nil {
		return err
	}
	target, desc := r.Request().PostFormValue("target"), r.Request().PostFormValue("description")
	sub := subscriptionForm(r)
	w, secret, err := cs.d.Webhooks.Register(r.Request().Context(), r.p, registry.Registration{Target: target, Description: desc, Subscription: sub, EventField: "event"})
	if apperr.Is(err, apperr.Invalid) {
		return cs.newWebhookView(r, "The webhook was not created: correct the fields marked below.",
			&newWebhookPage{Sub: sub, Target: target, Description: desc, Errors: fieldsOf(err)})
	}
	if err != nil {
		return err
	}
	return cs.done(r, webhookPath(w.ID), flash{Secret: secret,
		Notice: fmt.Sprintf("Webhook %d was created: %s events go to %s. Copy its signing secret now; it verifies every delivery.", w.ID, summary(w.Subscription()), w.Target)})
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
	target := r.Request().PostFormValue("target")
	sub := subscriptionForm(r)
	ch := registry.Patch{Target: &target, SubscriptionField: "event"}
	var desc *string
	if _, ok := r.Request().PostForm["description"]; ok { // a form without the field keeps it
		d := r.Request().PostForm.Get("description")
		ch.Description, desc = &d, &d
	}
	if len(sub.EventTypes) > 0 || sub.AllEvents || r.Request().PostForm.Get("events_shown") != "" {
		// A form without the fieldset keeps the subscription; one with it
		// and nothing ticked is refused.
		ch.Subscription = &sub
	}
	w, err := cs.d.Webhooks.Update(r.Request().Context(), r.p, id, ch)
	if apperr.Is(err, apperr.Invalid) {
		return cs.webhookForm(r, "The webhook was not changed: correct the fields marked below.", edit{Sub: &sub, Target: target, Description: desc}, fieldsOf(err))
	}
	if err != nil {
		return err
	}
	return cs.done(r, webhookPath(id), flash{Notice: fmt.Sprintf("Webhook %d now receives %s events at %s.", id, summary(w.Subscription()), w.Target)})
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
