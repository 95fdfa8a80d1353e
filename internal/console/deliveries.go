package console

import (
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
)

// The delivery log's filter form (a GET form: it works without
// JavaScript, and its URL can be shared), its cursor links, the test
// event's choice of type, and the endpoint's health.

// logFilter is the filter as typed, with the refusal of each field.
type logFilter struct {
	Status, Event, From, To string
	Errors                  fieldErrors
	// Any: some filter is set (the empty log then says so).
	Any bool
}

// dateInput is the format of <input type="datetime-local"> (seconds
// optional), read as UTC.
const dateInput = "2006-01-02T15:04"

func parseDate(s string) (*time.Time, bool) {
	if s == "" {
		return nil, true
	}
	for _, layout := range []string{dateInput, dateInput + ":05"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return &t, true
		}
	}
	return nil, false
}

// readFilter reads the log's filter and cursor from the query; a refused
// field gets its sentence (and the filter is not applied).
func readFilter(q url.Values) (logFilter, registry.DeliveryFilter) {
	lf := logFilter{Status: q.Get("status"), Event: q.Get("event"), From: q.Get("from"), To: q.Get("to"), Errors: fieldErrors{}}
	lf.Any = lf.Status != "" || lf.Event != "" || lf.From != "" || lf.To != ""
	f := registry.DeliveryFilter{Status: lf.Status, Event: lf.Event}
	var ok bool
	if f.From, ok = parseDate(lf.From); !ok {
		lf.Errors["from"] = "Give a date and time, such as 2026-03-01T09:00."
	}
	if f.Until, ok = parseDate(lf.To); !ok {
		lf.Errors["to"] = "Give a date and time, such as 2026-03-01T18:00."
	}
	for _, c := range []struct {
		name string
		dst  **uuid.UUID
	}{{"after", &f.After}, {"before", &f.Before}} {
		if v := q.Get(c.name); v != "" {
			id, err := uuid.Parse(v)
			if err != nil {
				lf.Errors["page"] = "This page link is broken; start again from the newest deliveries."
				continue
			}
			*c.dst = &id
		}
	}
	if err := f.Validate(); err != nil {
		for k, v := range fieldsOf(err) {
			switch k {
			case "status":
				lf.Errors[k] = "Choose a status from the list."
			case "event":
				lf.Errors[k] = "Choose an event type from the list."
			case "after", "before":
				lf.Errors["page"] = "This page link is broken; start again from the newest deliveries."
			default:
				lf.Errors[k] = v
			}
		}
	}
	return lf, f
}

// logPage is the log's rows and the links to the pages beside them.
type logPage struct {
	Newer, Older string
}

// cursorLinks are the newer and older pages' URLs (the filter kept): a
// page read after a cursor has newer rows (the cursor's), one read before
// a cursor older ones.
func cursorLinks(lf logFilter, f registry.DeliveryFilter, ds []registry.Delivery, more bool) logPage {
	var p logPage
	if len(ds) == 0 {
		return p
	}
	link := func(k, id string) string {
		q := url.Values{}
		for _, kv := range [][2]string{{"status", lf.Status}, {"event", lf.Event}, {"from", lf.From}, {"to", lf.To}} {
			if kv[1] != "" {
				q.Set(kv[0], kv[1])
			}
		}
		q.Set(k, id)
		return "?" + q.Encode() + "#log"
	}
	if f.After != nil || (f.Before != nil && more) {
		p.Newer = link("before", ds[0].ID)
	}
	if f.Before != nil || more {
		p.Older = link("after", ds[len(ds)-1].ID)
	}
	return p
}

// testChoice is an event type the test may send.
type testChoice struct{ Name, Label string }

// testChoices are the test event's types: the standard webhook.test first
// (the default), then every catalog type with an example to send.
func (cs *Console) testChoices() []testChoice {
	out := []testChoice{{outbox.WebhookTest, outbox.WebhookTest + " (default): a fixed test message"}}
	for _, et := range cs.eventTypes() {
		if len(et.Example) > 0 {
			label := et.Name
			if et.Description != "" {
				label += ": " + et.Description
			}
			out = append(out, testChoice{et.Name, label})
		}
	}
	return out
}

// example is the catalog's example payload of kind, nil when it has none.
func (cs *Console) example(kind string) json.RawMessage {
	for _, et := range cs.eventTypes() {
		if et.Name == kind {
			return et.Example
		}
	}
	return nil
}

// breaker is the registration's circuit breaker and auto-disable state in
// words (outbox's rule, Health in internal/webhooks/outbox).
type breaker struct {
	State    string // closed, open, half-open, disabled
	Sentence string
	Reason   string
	// RetryAt: when the next attempt may be made (an open circuit).
	RetryAt *time.Time
	// DisableAt: when the registration is disabled if every attempt
	// keeps failing.
	DisableAt *time.Time
}

func breakerOf(w registry.Webhook, now time.Time) breaker {
	var b breaker
	if w.LastFailureReason != nil {
		b.Reason = *w.LastFailureReason
	}
	switch {
	case !w.Active:
		b.State = "disabled"
		b.Sentence = "Disabled: no delivery is attempted until it is enabled again."
		if w.DisabledReason != nil {
			b.Reason = *w.DisabledReason
		} else {
			b.Reason = "disabled by a user"
		}
		return b
	case w.CircuitOpenUntil != nil && w.CircuitOpenUntil.After(now):
		b.State, b.RetryAt = "open", w.CircuitOpenUntil
		b.Sentence = fmt.Sprintf("Paused after %d failed attempts in a row: no delivery is attempted until the pause ends; then one attempt probes the endpoint.", w.ConsecutiveFailures)
	case w.ConsecutiveFailures >= outbox.TripAfter:
		b.State = "half-open"
		b.Sentence = "Probing: one attempt at a time until one succeeds, which resumes normal delivery."
	case w.ConsecutiveFailures > 0:
		b.State = "closed"
		b.Sentence = fmt.Sprintf("Delivering; the last %d attempts failed (the pause starts after %d in a row).", w.ConsecutiveFailures, outbox.TripAfter)
	default:
		b.State = "closed"
		b.Sentence = "Delivering normally."
		b.Reason = ""
	}
	if w.FailingSince != nil && w.ConsecutiveFailures > 0 {
		at := w.FailingSince.Add(outbox.AutoDisableAfter)
		b.DisableAt = &at
	}
	return b
}

// refusedFilter says which filter fields were refused.
func refusedFilter(lf logFilter) string {
	if len(lf.Errors) == 0 {
		return ""
	}
	return "The deliveries were not filtered: correct the fields marked below."
}
