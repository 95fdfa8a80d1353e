package httpapi_test

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/httpapi"
	"github.com/finsvc/finsvc/internal/textinput"
)

// badText are the two ways a JSON string can break the text rule: a NUL
// (an escape, since JSON has no raw control characters) and a byte that is
// not UTF-8. Each is a function of the valid text it spoils.
var badText = map[string]func(string) string{
	"NUL":           func(s string) string { return s + `\u0000` },
	"invalid UTF-8": func(s string) string { return s + "\xff" },
}

// wantText fails unless resp is status with the text message for field.
func wantText(t *testing.T, resp *apitest.Response, status int, field string) {
	t.Helper()
	resp.Status(t, status)
	e := resp.Err(t)
	if got := e.Errors[field]; len(got) != 1 || got[0] != textinput.Message {
		t.Fatalf("errors = %q, want errors[%q] = [%q]", e.Errors, field, textinput.Message)
	}
}

// jsonOperation is an operation of the API with a JSON request body, and a
// URL of it with every path parameter filled.
type jsonOperation struct {
	method, path, url string
	// optional: the body may be left out (an empty body is no body).
	optional bool
}

// jsonBodyOperations walks the spec for every /api/1.0 operation with a
// JSON body, in path order (and fails when it finds too few to be a walk).
func jsonBodyOperations(t *testing.T) []jsonOperation {
	t.Helper()
	spec, err := httpapi.Spec()
	if err != nil {
		t.Fatal(err)
	}
	const id = "7b0c4a1e-3d5f-4b8a-9c2d-1e2f3a4b5c6d"
	fill := strings.NewReplacer("{id}", "1", "{act_uuid}", id, "{data_id}", "1", "{fetch_request_id}", id, "{delivery_id}", id)
	var out []jsonOperation
	for _, p := range slices.Sorted(maps.Keys(spec.Paths.Map())) {
		if !strings.HasPrefix(p, "/api/1.0/") {
			continue
		}
		ops := spec.Paths.Value(p).Operations()
		for _, method := range slices.Sorted(maps.Keys(ops)) {
			if rb := ops[method].RequestBody; rb != nil && rb.Value.Content.Get("application/json") != nil {
				out = append(out, jsonOperation{method, p, fill.Replace(p), !rb.Value.Required})
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d operations with JSON bodies found; the spec walk is broken", len(out))
	}
	return out
}

// TestTextInputEveryJSONBody walks the spec: every operation with a JSON
// body refuses a string with NUL or invalid UTF-8, naming the field, before
// anything else looks at the request (400; 422 on the act-data writes).
func TestTextInputEveryJSONBody(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		tok := acme.AdminToken()
		for _, op := range jsonBodyOperations(t) {
			method, p := op.method, op.path
			status := http.StatusBadRequest
			if strings.HasPrefix(p, "/api/1.0/acts/{act_uuid}/data") {
				status = http.StatusUnprocessableEntity
			}
			for name, spoil := range badText {
				t.Run(method+" "+p+" "+name, func(t *testing.T) {
					body := `{"title": "` + spoil("Q1") + `", "nested": [{"a": "ok"}, {"b": "` + spoil("") + `"}]}`
					resp := acme.Do(method, op.url, tok, body)
					wantText(t, resp, status, "title")
					wantText(t, resp, status, "nested[1].b")
				})
			}
		}
		// Query parameters obey the same rule.
		for _, q := range []string{"status=draft%00", "status=%FF", "x%00=1"} {
			resp := acme.Do("GET", "/api/1.0/acts?"+q, tok, nil).Status(t, http.StatusBadRequest)
			if len(resp.Err(t).Errors) == 0 {
				t.Errorf("%s: no field message: %s", q, resp.Body)
			}
		}
	})
}

// TestTextInputRealWrites sends NUL and invalid UTF-8 in the text fields of
// each write endpoint, on real resources: PostgreSQL used to answer 500
// (SQLSTATE 22021) where SQLite stored the value. Now both answer the same
// 400 (422 for act data) and nothing changes.
func TestTextInputRealWrites(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		admin := f.AdminToken()
		act := f.createAct(t, "Q1 review")
		dp := dpByKey(t, act, "note")
		acme := &webhookEnv{TenantEnv: f.TenantEnv, member: f.member, viewer: f.viewer,
			tok: f.Token(f.member, auth.ScopeWebhooksRead, auth.ScopeWebhooksWrite, auth.ScopeActsRead, auth.ScopeClientsRead)}
		wh := acme.create(t, "act.created", "https://hooks.example.com/a")
		f.Do("POST", "/api/1.0/templates", admin, creditReviewJSON).Status(t, http.StatusCreated)
		clientsBefore := f.Do("GET", "/api/1.0/clients", admin, nil).Status(t, http.StatusOK).Body
		actBefore := f.Do("GET", "/api/1.0/acts/"+act.Uuid.String(), admin, nil).Status(t, http.StatusOK).Body
		tplsBefore := f.Do("GET", "/api/1.0/templates", admin, nil).Status(t, http.StatusOK).Body
		whBefore := f.Do("GET", "/api/1.0/webhooks", admin, nil).Status(t, http.StatusOK).Body

		for name, spoil := range badText {
			cases := []struct {
				method, path, body string
				status             int
				field              string
			}{
				{"POST", "/api/1.0/clients", `{"company_name":"` + spoil("Acme") + `","org_number":"1","country":"NO","credit_limit":1}`, 400, "company_name"},
				{"PATCH", fmt.Sprintf("/api/1.0/clients/%d", f.client.ID), `{"org_number":"` + spoil("556") + `"}`, 400, "org_number"},
				{"POST", "/api/1.0/templates", strings.Replace(creditReviewJSON, `"Credit review"`, `"`+spoil("Credit review")+`"`, 1), 400, "name"},
				{"PUT", "/api/1.0/templates/1", strings.Replace(creditReviewJSON, `"AAA"`, `"`+spoil("AAA")+`"`, 1), 400, "fields[5].options.choices[0]"},
				{"POST", "/api/1.0/acts", fmt.Sprintf(`{"client_id":%d,"template_id":%d,"title":"%s"}`, f.client.ID, f.tpl.ID, spoil("Q2")), 400, "title"},
				{"PATCH", "/api/1.0/acts/" + act.Uuid.String(), `{"title":"` + spoil("Q1") + `"}`, 400, "title"},
				{"PUT", fmt.Sprintf("/api/1.0/acts/%s/data/%d", act.Uuid, dp.Id), `{"value":"` + spoil("hi") + `"}`, 422, "value"},
				{"PUT", "/api/1.0/acts/" + act.Uuid.String() + "/data", fmt.Sprintf(`{"data":[{"id":%d,"value":"%s"}]}`, dp.Id, spoil("hi")), 422, "data[0].value"},
				{"PUT", "/api/1.0/acts/" + act.Uuid.String() + "/data", `{"fetch_request_id":"7b0c4a1e-3d5f-4b8a-9c2d-1e2f3a4b5c6d","data":[{"template_field_key":"revenue","error":"` + spoil("down") + `"}]}`, 422, "data[0].error"},
				{"POST", "/api/1.0/webhooks", `{"event":"act.created","target":"https://hooks.example.com/` + spoil("b") + `"}`, 400, "target"},
				{"PATCH", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id), `{"target":"https://hooks.example.com/` + spoil("c") + `"}`, 400, "target"},
			}
			for _, c := range cases {
				t.Run(name+" "+c.method+" "+c.path, func(t *testing.T) {
					wantText(t, f.Do(c.method, c.path, admin, c.body), c.status, c.field)
				})
			}
		}
		for path, before := range map[string][]byte{
			"/api/1.0/clients": clientsBefore, "/api/1.0/acts/" + act.Uuid.String(): actBefore,
			"/api/1.0/templates": tplsBefore, "/api/1.0/webhooks": whBefore,
		} {
			if after := f.Do("GET", path, admin, nil).Status(t, http.StatusOK).Body; string(after) != string(before) {
				t.Errorf("%s changed:\nbefore %s\nafter  %s", path, before, after)
			}
		}
		if n := countRows(t, env, "acts", "tenant_id = ?", f.Tenant.ID); n != 1 {
			t.Errorf("%d acts, want 1", n)
		}
	})
}
