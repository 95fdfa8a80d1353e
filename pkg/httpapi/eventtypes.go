package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/pkg/auth"
	"github.com/finsvc/finsvc/pkg/webhooks/outbox"
)

// ListEventTypes is GET /event-types.
func (h *Handlers) ListEventTypes(context.Context, apiserver.ListEventTypesRequestObject) (apiserver.ListEventTypesResponseObject, error) {
	return apiserver.ListEventTypes200JSONResponse{Data: h.eventTypes}, nil
}

// TestWebhook is POST /webhooks/{id}/test.
func (h *Handlers) TestWebhook(ctx context.Context, req apiserver.TestWebhookRequestObject) (apiserver.TestWebhookResponseObject, error) {
	d, err := h.svc.Webhooks.Test(ctx, auth.MustFromContext(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	v, err := deliveryView(d)
	if err != nil {
		return nil, err
	}
	return apiserver.TestWebhook202JSONResponse(v), nil
}

// eventTypes reads the event types from the spec's callbacks on
// createWebhook, the one place deliveries are described: each callback's
// request body names the envelope schema, whose `event` enum is the name.
// The schemas are returned with every $ref resolved, so that a receiver
// can validate a delivery with the schema alone. Every kind the outbox can
// send must be described there (New fails otherwise).
func eventTypes(spec *openapi3.T) ([]models.EventType, error) {
	item := spec.Paths.Find("/api/1.0/webhooks")
	if item == nil || item.Post == nil {
		return nil, fmt.Errorf("httpapi: the spec has no createWebhook")
	}
	var out []models.EventType
	for name, cb := range item.Post.Callbacks {
		if cb.Value == nil {
			continue
		}
		for _, pi := range cb.Value.Map() {
			op := pi.Post
			if op == nil || op.RequestBody == nil || op.RequestBody.Value == nil {
				return nil, fmt.Errorf("httpapi: callback %s has no request body", name)
			}
			mt := op.RequestBody.Value.Content.Get("application/json")
			if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
				return nil, fmt.Errorf("httpapi: callback %s has no JSON schema", name)
			}
			ev := mt.Schema.Value.Properties["event"]
			if ev == nil || ev.Value == nil || len(ev.Value.Enum) != 1 {
				return nil, fmt.Errorf("httpapi: callback %s: the envelope's event is not one name", name)
			}
			kind, _ := ev.Value.Enum[0].(string)
			schema, err := resolved(spec, mt.Schema, nil)
			if err != nil {
				return nil, fmt.Errorf("httpapi: callback %s: %w", name, err)
			}
			desc := strings.TrimSpace(op.Description)
			if desc == "" {
				desc = op.Summary
			}
			m, _ := schema.(map[string]any)
			out = append(out, models.EventType{Name: kind, Description: desc, Subscribable: outbox.ValidKind(kind), Schema: m})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	described := map[string]bool{}
	for _, t := range out {
		described[t.Name] = true
	}
	for _, k := range append([]string{outbox.WebhookTest}, outbox.Kinds...) {
		if !described[k] {
			return nil, fmt.Errorf("httpapi: event %s has no callback in the spec", k)
		}
	}
	return out, nil
}

// resolved is ref as plain JSON with every component $ref replaced by the
// component itself (seen: the components being inlined on the way here).
func resolved(spec *openapi3.T, ref *openapi3.SchemaRef, seen []string) (any, error) {
	b, err := json.Marshal(ref.Value)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return inline(spec, v, seen)
}

func inline(spec *openapi3.T, v any, seen []string) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if r, ok := x["$ref"].(string); ok {
			name, found := strings.CutPrefix(r, "#/components/schemas/")
			c := spec.Components.Schemas[name]
			if !found || c == nil {
				return nil, fmt.Errorf("unresolvable $ref %s", r)
			}
			if slices.Contains(seen, name) {
				// A schema that contains itself (FieldOptions → a table's
				// columns → their FieldOptions) is inlined once; its inner
				// occurrence is an open object that says what it is.
				return map[string]any{"type": "object", "nullable": true,
					"description": name + ", as above (it contains itself)"}, nil
			}
			return resolved(spec, c, append(slices.Clone(seen), name))
		}
		for k, e := range x {
			r, err := inline(spec, e, seen)
			if err != nil {
				return nil, err
			}
			x[k] = r
		}
	case []any:
		for i, e := range x {
			r, err := inline(spec, e, seen)
			if err != nil {
				return nil, err
			}
			x[i] = r
		}
	}
	return v, nil
}
