package httpapi_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// TestWebhookEventTypes: a registration takes several event types
// (event_types) or all of them (all_events), each event is delivered once
// to it, the deprecated single event is still accepted (with the
// Deprecation headers) and shown, a body giving two of the three is a 400
// naming event_types, and the read-scope rule applies to each kind. Every
// response is validated against the spec.
func TestWebhookEventTypes(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := newWebhookEnv(t, env, "acme")
		var two models.WebhookWithSecret
		r := acme.Do("POST", "/api/1.0/webhooks", acme.tok, map[string]any{
			"event_types": []string{"act.updated", "act.created"}, "target": "https://hooks.example.com/two"}).Status(t, 201).Decode(t, &two)
		if r.Header.Get("Deprecation") != "" {
			t.Errorf("event_types answered with Deprecation %q", r.Header.Get("Deprecation"))
		}
		if !slices.Equal(two.EventTypes, []models.EventKind{"act.created", "act.updated"}) || two.AllEvents || two.Event != "act.created" {
			t.Fatalf("created %+v", two)
		}
		var all models.WebhookWithSecret
		acme.Do("POST", "/api/1.0/webhooks", acme.tok, map[string]any{"all_events": true, "target": "https://hooks.example.com/all"}).
			Status(t, 201).Decode(t, &all)
		if !all.AllEvents || len(all.EventTypes) != len(outbox.Kinds) {
			t.Fatalf("all events: %+v", all)
		}
		// The deprecated single event: accepted, answered with the headers.
		var one models.WebhookWithSecret
		r = acme.Do("POST", "/api/1.0/webhooks", acme.tok, map[string]any{"event": "client.created", "target": "https://hooks.example.com/one"}).
			Status(t, 201).Decode(t, &one)
		if r.Header.Get("Deprecation") == "" || r.Header.Get("Sunset") == "" || r.Header.Get("Link") == "" {
			t.Errorf("event answered without the deprecation headers: %v", r.Header)
		}
		if !slices.Equal(one.EventTypes, []models.EventKind{"client.created"}) {
			t.Fatalf("one: %+v", one)
		}

		act := emit(t, acme.TenantEnv, "act.updated", map[string]any{"act": map[string]any{"uuid": uuid.NewString()}})
		client := emit(t, acme.TenantEnv, "client.created", map[string]any{"client": map[string]any{"id": 1}})
		got := func(id int64) []uuid.UUID {
			var log models.DeliveryList
			acme.Do("GET", fmt.Sprintf("/api/1.0/webhooks/%d/deliveries", id), acme.tok, nil).Status(t, 200).Decode(t, &log)
			var out []uuid.UUID
			for _, d := range log.Data {
				out = append(out, d.EventId)
			}
			return out
		}
		if g := got(two.Id); !slices.Equal(g, []uuid.UUID{act}) {
			t.Errorf("two received %v, want the act event once", g)
		}
		if g := got(all.Id); len(g) != 2 || !slices.Contains(g, act) || !slices.Contains(g, client) {
			t.Errorf("all received %v, want both events once", g)
		}
		if g := got(one.Id); !slices.Equal(g, []uuid.UUID{client}) {
			t.Errorf("one received %v, want the client event once", g)
		}

		// A change to all events, and back to a list.
		path := fmt.Sprintf("/api/1.0/webhooks/%d", two.Id)
		var upd models.Webhook
		acme.Do("PATCH", path, acme.tok, map[string]any{"all_events": true}).Status(t, 200).Decode(t, &upd)
		if !upd.AllEvents || len(upd.EventTypes) != len(outbox.Kinds) {
			t.Fatalf("patched to all: %+v", upd)
		}
		acme.Do("PATCH", path, acme.tok, map[string]any{"event_types": []string{"act.deleted"}}).Status(t, 200).Decode(t, &upd)
		if upd.AllEvents || !slices.Equal(upd.EventTypes, []models.EventKind{"act.deleted"}) {
			t.Fatalf("patched to act.deleted: %+v", upd)
		}

		// Refusals, nothing applied.
		for _, body := range []map[string]any{
			{"event_types": []string{"act.created"}, "all_events": true},
			{"event_types": []string{"act.created"}, "event": "act.created"},
			{"event_types": []string{}},
			{"event_types": []string{"act.exploded"}},
			{"all_events": false},
		} {
			e := acme.Do("PATCH", path, acme.tok, body).Status(t, 400).Err(t)
			named := false
			for f := range e.Errors {
				named = named || strings.HasPrefix(f, "event_types") || f == "all_events"
			}
			if !named {
				t.Errorf("%v: errors %v, want event_types or all_events named", body, e.Errors)
			}
		}
		acme.Do("GET", path, acme.tok, nil).Status(t, 200).Decode(t, &upd)
		if !slices.Equal(upd.EventTypes, []models.EventKind{"act.deleted"}) {
			t.Fatalf("after refusals: %+v", upd)
		}
		acme.Do("POST", "/api/1.0/webhooks", acme.tok, map[string]any{"target": "https://hooks.example.com/none"}).Status(t, 400)

		// The read-scope rule, per kind: acts:read alone takes act kinds
		// only, and not all events.
		actsOnly := acme.Token(acme.member, auth.ScopeWebhooksWrite, auth.ScopeWebhooksRead, auth.ScopeActsRead)
		acme.Do("POST", "/api/1.0/webhooks", actsOnly, map[string]any{"event_types": []string{"act.created", "act.deleted"}, "target": "https://hooks.example.com/a"}).Status(t, 201)
		acme.Do("POST", "/api/1.0/webhooks", actsOnly, map[string]any{"event_types": []string{"act.created", "client.deleted"}, "target": "https://hooks.example.com/a"}).Status(t, 403)
		acme.Do("POST", "/api/1.0/webhooks", actsOnly, map[string]any{"all_events": true, "target": "https://hooks.example.com/a"}).Status(t, 403)
	}, withSecret(false))
}

// TestWebhookDescription: a registration's free-text description is
// stored at creation, changed and cleared by PATCH, listed, and one over
// 500 characters is a 400 that changes nothing.
func TestWebhookDescription(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := newWebhookEnv(t, env, "acme")
		var w models.WebhookWithSecret
		acme.Do("POST", "/api/1.0/webhooks", acme.tok, map[string]any{"event_types": []string{"act.created"},
			"target": "https://hooks.example.com/d", "description": "Invoices sync, production"}).Status(t, 201).Decode(t, &w)
		if w.Description != "Invoices sync, production" {
			t.Fatalf("created %+v", w)
		}
		path := fmt.Sprintf("/api/1.0/webhooks/%d", w.Id)
		var got models.Webhook
		acme.Do("PATCH", path, acme.tok, map[string]any{"description": "Ledger, staging"}).Status(t, 200).Decode(t, &got)
		if got.Description != "Ledger, staging" || got.Target != w.Target {
			t.Fatalf("patched %+v", got)
		}
		e := acme.Do("PATCH", path, acme.tok, map[string]any{"description": strings.Repeat("é", 501)}).Status(t, 400).Err(t)
		if len(e.Errors["description"]) == 0 {
			t.Errorf("too long: errors %v", e.Errors)
		}
		var list models.WebhookList
		acme.Do("GET", "/api/1.0/webhooks", acme.tok, nil).Status(t, 200).Decode(t, &list)
		if len(list.Data) != 1 || list.Data[0].Description != "Ledger, staging" {
			t.Fatalf("listed %+v", list.Data)
		}
		acme.Do("PATCH", path, acme.tok, map[string]any{"description": ""}).Status(t, 200).Decode(t, &got)
		if got.Description != "" {
			t.Fatalf("cleared %+v", got)
		}
		var plain models.WebhookWithSecret
		acme.Do("POST", "/api/1.0/webhooks", acme.tok, map[string]any{"event_types": []string{"act.created"}, "target": "https://hooks.example.com/e"}).
			Status(t, 201).Decode(t, &plain)
		if plain.Description != "" {
			t.Fatalf("no description given: %+v", plain)
		}
	}, withSecret(false))
}
