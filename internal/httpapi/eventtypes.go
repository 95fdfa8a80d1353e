package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/openapi"
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
// createWebhook (openapi.Events), the one place deliveries are described.
// The schemas are returned with every $ref resolved, so that a receiver
// can validate a delivery with the schema alone. The callbacks and the
// outbox's kinds must be the same set, both ways (New fails otherwise).
func eventTypes(spec *openapi3.T) ([]models.EventType, error) {
	if err := openapi.CheckEventKinds(spec, outbox.Kinds, outbox.SentOnly); err != nil {
		return nil, fmt.Errorf("httpapi: %w", err)
	}
	events, err := openapi.Events(spec)
	if err != nil {
		return nil, err
	}
	out := make([]models.EventType, 0, len(events))
	for _, e := range events {
		schema, err := resolved(spec, e.Ref, nil)
		if err != nil {
			return nil, fmt.Errorf("httpapi: event %s: %w", e.Kind, err)
		}
		desc := strings.TrimSpace(e.Operation.Description)
		if desc == "" {
			desc = e.Operation.Summary
		}
		m, _ := schema.(map[string]any)
		out = append(out, models.EventType{Name: e.Kind, Description: desc, Subscribable: outbox.ValidKind(e.Kind), Schema: m})
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
