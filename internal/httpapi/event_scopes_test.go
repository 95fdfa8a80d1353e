package httpapi_test

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// Scopes bound what events reveal: GET /events lists an event, and GET
// /events/{id} returns it, only to a token that also holds the read scope
// of the object it carries (outbox.ReadScope, from the spec). A token with
// only events:read reads neither a client's credit limit nor an act's
// values, as GET /clients and GET /acts would refuse it.
func TestEventsNeedTheObjectsReadScope(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		act := f.createAct(t, "First")
		f.Do("POST", "/api/1.0/clients", f.Token(f.member, auth.ScopeClientsWrite), nordic).Status(t, http.StatusCreated)

		all := listEvents(t, f.TenantEnv, f.Token(f.viewer, auth.ScopeEventsRead, auth.ScopeActsRead, auth.ScopeClientsRead), nil)
		kinds := func(p eventPage) []string {
			var out []string
			for _, e := range p.Data {
				out = append(out, string(e.Event))
			}
			slices.Sort(out)
			return out
		}
		if got := kinds(all); !slices.Equal(got, []string{outbox.ActCreated, outbox.ClientCreated}) {
			t.Fatalf("with every read scope: %v", got)
		}
		var actEvent, clientEvent string
		for _, e := range all.Data {
			if e.Event == outbox.ActCreated {
				actEvent = e.Id.String()
			} else {
				clientEvent = e.Id.String()
			}
		}

		for _, tc := range []struct {
			scopes []string
			want   []string
		}{
			{[]string{auth.ScopeEventsRead}, nil},
			{[]string{auth.ScopeEventsRead, auth.ScopeActsRead}, []string{outbox.ActCreated}},
			{[]string{auth.ScopeEventsRead, auth.ScopeClientsRead}, []string{outbox.ClientCreated}},
		} {
			tok := f.Token(f.viewer, tc.scopes...)
			if got := kinds(listEvents(t, f.TenantEnv, tok, nil)); !slices.Equal(got, tc.want) {
				t.Errorf("%v lists %v, want %v", tc.scopes, got, tc.want)
			}
			for _, k := range []string{outbox.ActCreated, outbox.ClientCreated} {
				got := kinds(listEvents(t, f.TenantEnv, tok, url.Values{"type": {k}}))
				if want := slices.Contains(tc.want, k); want != (len(got) == 1) {
					t.Errorf("%v, type=%s lists %v", tc.scopes, k, got)
				}
			}
			for id, k := range map[string]string{actEvent: outbox.ActCreated, clientEvent: outbox.ClientCreated} {
				want := http.StatusNotFound
				if slices.Contains(tc.want, k) {
					want = http.StatusOK
				}
				f.Do("GET", "/api/1.0/events/"+id, tok, nil).Status(t, want)
			}
		}
		// The act itself stays out of reach too.
		f.Do("GET", "/api/1.0/acts/"+act.Uuid.String(), f.Token(f.viewer, auth.ScopeEventsRead), nil).Status(t, http.StatusForbidden)
	})
}

// Registering a webhook for a kind, or changing a registration's kind,
// needs the read scope of the kind's object besides webhooks:write: a 403
// that registers or changes nothing.
func TestWebhookKindNeedsTheObjectsReadScope(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		te := env.Tenant("acme")
		m := te.User(auth.RoleMember)
		hooksOnly := te.Token(m, auth.ScopeWebhooksRead, auth.ScopeWebhooksWrite)
		withActs := te.Token(m, auth.ScopeWebhooksRead, auth.ScopeWebhooksWrite, auth.ScopeActsRead)
		body := map[string]any{"event": outbox.ActCreated, "target": "https://hooks.example.com/x"}

		e := te.Do("POST", "/api/1.0/webhooks", hooksOnly, body).Status(t, http.StatusForbidden).Err(t)
		if e.Message == "" {
			t.Fatalf("refusal %+v", e)
		}
		var list struct {
			Data []models.Webhook `json:"data"`
		}
		te.Do("GET", "/api/1.0/webhooks", hooksOnly, nil).Status(t, http.StatusOK).Decode(t, &list)
		if len(list.Data) != 0 {
			t.Fatalf("a refused registration was kept: %+v", list.Data)
		}

		var w models.WebhookWithSecret
		te.Do("POST", "/api/1.0/webhooks", withActs, body).Status(t, http.StatusCreated).Decode(t, &w)
		path := "/api/1.0/webhooks/" + strconv.FormatInt(w.Id, 10)
		te.Do("PATCH", path, withActs, map[string]any{"event": outbox.ClientUpdated, "target": "https://hooks.example.com/y"}).Status(t, http.StatusForbidden)
		var got models.Webhook
		te.Do("GET", path, withActs, nil).Status(t, http.StatusOK).Decode(t, &got)
		if got.Event != outbox.ActCreated || got.Target != "https://hooks.example.com/x" {
			t.Fatalf("a refused change was applied: %+v", got)
		}
		te.Do("PATCH", path, te.Token(m, auth.ScopeWebhooksWrite, auth.ScopeClientsRead), map[string]any{"event": outbox.ClientUpdated}).
			Status(t, http.StatusOK)
	})
}
