package openapi

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Event is one webhook event kind as the spec describes it: a callback on
// createWebhook whose request body is the envelope schema, and whose
// envelope's `event` enum is the kind's one name.
type Event struct {
	Kind      string              // act.created
	Schema    string              // the envelope's component name, ActCreatedEvent
	Ref       *openapi3.SchemaRef // the request body's schema
	Operation *openapi3.Operation // the callback's operation (summary, description)
}

// Events reads every event kind from the callbacks of createWebhook
// (POST /api/1.0/webhooks), the one place deliveries are described, sorted
// by kind. The callbacks are the list: the outbox's kinds are checked
// against it at start-up (internal/httpapi), and the conformance harness
// validates deliveries with its schemas.
func Events(spec *openapi3.T) ([]Event, error) {
	item := spec.Paths.Find("/api/1.0/webhooks")
	if item == nil || item.Post == nil {
		return nil, errors.New("openapi: the spec has no createWebhook")
	}
	var out []Event
	for _, name := range slices.Sorted(maps.Keys(item.Post.Callbacks)) {
		cb := item.Post.Callbacks[name]
		if cb.Value == nil {
			continue
		}
		for _, pi := range cb.Value.Map() {
			op := pi.Post
			if op == nil || op.RequestBody == nil || op.RequestBody.Value == nil {
				return nil, fmt.Errorf("openapi: callback %s has no request body", name)
			}
			mt := op.RequestBody.Value.Content.Get("application/json")
			if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
				return nil, fmt.Errorf("openapi: callback %s has no JSON schema", name)
			}
			schema, ok := strings.CutPrefix(mt.Schema.Ref, "#/components/schemas/")
			if !ok {
				return nil, fmt.Errorf("openapi: callback %s: the envelope is not a component schema", name)
			}
			ev := mt.Schema.Value.Properties["event"]
			if ev == nil || ev.Value == nil || len(ev.Value.Enum) != 1 {
				return nil, fmt.Errorf("openapi: callback %s: the envelope's event is not one name", name)
			}
			kind, _ := ev.Value.Enum[0].(string)
			if kind == "" {
				return nil, fmt.Errorf("openapi: callback %s: the envelope's event is not a string", name)
			}
			out = append(out, Event{Kind: kind, Schema: schema, Ref: mt.Schema, Operation: op})
		}
	}
	slices.SortFunc(out, func(a, b Event) int { return strings.Compare(a.Kind, b.Kind) })
	for i := 1; i < len(out); i++ {
		if out[i].Kind == out[i-1].Kind {
			return nil, fmt.Errorf("openapi: two callbacks describe %s", out[i].Kind)
		}
	}
	return out, nil
}

// CheckEventKinds compares the spec's event kinds with the service's: the
// callbacks must describe exactly subscribable plus sent-only kinds, and
// the EventKind and DeliveryEventKind enums must list the subscribable and
// all kinds. Every difference, either way, is an error (New refuses to
// start).
func CheckEventKinds(spec *openapi3.T, subscribable, sentOnly []string) error {
	events, err := Events(spec)
	if err != nil {
		return err
	}
	var described []string
	for _, e := range events {
		described = append(described, e.Kind)
	}
	all := append(slices.Clone(subscribable), sentOnly...)
	errs := []error{differ("the callbacks of createWebhook", described, "the outbox", all)}
	for name, want := range map[string][]string{"EventKind": subscribable, "DeliveryEventKind": all} {
		ref := spec.Components.Schemas[name]
		if ref == nil || ref.Value == nil {
			errs = append(errs, fmt.Errorf("the spec has no schema %s", name))
			continue
		}
		var enum []string
		for _, v := range ref.Value.Enum {
			s, _ := v.(string)
			enum = append(enum, s)
		}
		errs = append(errs, differ("the spec's "+name, enum, "the outbox", want))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("openapi: event kinds: %w", err)
	}
	return nil
}

func differ(aName string, a []string, bName string, b []string) error {
	var onlyA, onlyB []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			onlyA = append(onlyA, x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			onlyB = append(onlyB, x)
		}
	}
	if len(onlyA)+len(onlyB) == 0 {
		return nil
	}
	slices.Sort(onlyA)
	slices.Sort(onlyB)
	return fmt.Errorf("only in %s %v, only in %s %v", aName, onlyA, bName, onlyB)
}
