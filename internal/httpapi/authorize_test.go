package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/uuid"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/authspec"
	"github.com/finsvc/finsvc/internal/httpapi"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/openapi"
)

// apiOp is one operation of the JSON API as the spec declares it.
type apiOp struct {
	method, path string
	op           *openapi3.Operation
	item         *openapi3.PathItem
	scopes       []string // the oauth2 scopes of its security requirement
}

// apiOps reads every /api/1.0 operation of the embedded spec, with the
// scopes it declares (its own security, else the document's).
func apiOps(t *testing.T) []apiOp {
	t.Helper()
	spec, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	var out []apiOp
	for path, item := range spec.Paths.Map() {
		if !strings.HasPrefix(path, "/api/1.0/") {
			continue
		}
		for method, op := range item.Operations() {
			sec := spec.Security
			if op.Security != nil {
				sec = *op.Security
			}
			if len(sec) != 1 {
				t.Fatalf("%s: %d security requirements", op.OperationID, len(sec))
			}
			scopes, ok := sec[0]["oauth2"]
			if !ok {
				t.Fatalf("%s: no oauth2 requirement", op.OperationID)
			}
			out = append(out, apiOp{method: method, path: path, op: op, item: item, scopes: scopes})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].op.OperationID < out[j].op.OperationID })
	return out
}

// documentedAction is the role rule the spec's oauth2 description states
// ("viewer reads; member also writes clients and acts and registers
// webhooks; admin does everything"), with listing users reserved to
// admins: reads need any role, template changes need an admin, other
// changes a member.
func documentedAction(o apiOp) auth.Action {
	switch {
	case slices.Contains(o.op.Tags, "Users") && o.op.OperationID != "getMe":
		return auth.Admin // "Admins only" in every Users operation's description
	case slices.Contains(o.op.Tags, "Audit"):
		return auth.Admin // and in every Audit operation's
	case o.method == http.MethodGet:
		return auth.Read
	case slices.Contains(o.op.Tags, "Templates"):
		return auth.Admin
	default:
		return auth.Write
	}
}

// The enforced rule of every operation is the declared one: the table
// built from the spec carries exactly the declared scopes and the
// documented role for each operation, and nothing else.
func TestAuthorizationRulesMatchTheSpec(t *testing.T) {
	pol, err := authspec.Load()
	if err != nil {
		t.Fatal(err)
	}
	rules, err := httpapi.Rules(pol)
	if err != nil {
		t.Fatal(err)
	}
	ops := apiOps(t)
	if len(rules) != len(ops) {
		t.Fatalf("%d rules for %d operations", len(rules), len(ops))
	}
	byID := map[string]auth.Rule{}
	for _, r := range rules {
		byID[r.Operation] = r
	}
	for _, o := range ops {
		r, ok := byID[o.op.OperationID]
		if !ok {
			t.Errorf("%s: no rule", o.op.OperationID)
			continue
		}
		if !slices.Equal(r.Scopes, o.scopes) {
			t.Errorf("%s: enforces scopes %v, the spec declares %v", o.op.OperationID, r.Scopes, o.scopes)
		}
		if want := documentedAction(o); r.Action != want {
			t.Errorf("%s: role action %d, documented %d", o.op.OperationID, r.Action, want)
		}
	}
}

// Every operation, over HTTP on both dialects: a token with exactly the
// declared scopes and the least role allowed gets through (no 401 or 403:
// nothing more is enforced than declared); a token lacking any declared
// scope gets 403 naming it, and a role one step too low gets 403 (nothing
// less is enforced). Requests are valid (the spec's own examples), so that
// they reach authorization, which runs after validation.
func TestAuthorizationEnforcedPerOperation(t *testing.T) {
	ops := apiOps(t)
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		uid := map[string]int64{}
		for _, r := range []string{auth.RoleViewer, auth.RoleMember, auth.RoleAdmin} {
			uid[r] = acme.User(r)
		}
		for _, o := range ops {
			t.Run(o.op.OperationID, func(t *testing.T) {
				path := fillPath(t, o)
				body := exampleBody(t, o)
				send := func(role string, scopes []string) *apitest.Response {
					t.Helper()
					return acme.Do(strings.ToUpper(o.method), path, acme.Token(uid[role], scopes...), body)
				}

				least, below := leastRole(documentedAction(o))
				// A registration for a kind also needs the read scope of
				// the kind's object (outbox.ReadScope): the one rule
				// beyond the operation's declared scopes.
				scopes := o.scopes
				var m struct {
					Event      string   `json:"event"`
					EventTypes []string `json:"event_types"`
				}
				if b, ok := body.([]byte); ok && json.Unmarshal(b, &m) == nil && strings.Contains(o.op.OperationID, "Webhook") {
					for _, k := range append(m.EventTypes, m.Event) {
						if sc := outbox.ReadScope[k]; sc != "" && !slices.Contains(scopes, sc) {
							scopes = append(slices.Clone(scopes), sc)
						}
					}
				}
				if r := send(least, scopes); r.Code == http.StatusUnauthorized || r.Code == http.StatusForbidden || r.Code >= 500 {
					t.Fatalf("%s with scopes %v: %d %s", least, scopes, r.Code, r.Body)
				}
				for _, s := range o.scopes {
					others := slices.DeleteFunc(slices.Clone(auth.AllScopes), func(x string) bool { return x == s })
					e := send(auth.RoleAdmin, others).Status(t, http.StatusForbidden).Err(t)
					if want := fmt.Sprintf("token lacks the %s scope", s); e.Message != want || len(e.Errors) != 0 {
						t.Errorf("without %s: %+v, want message %q", s, e, want)
					}
				}
				if below != "" {
					e := send(below, o.scopes).Status(t, http.StatusForbidden).Err(t)
					if !strings.HasPrefix(e.Message, "role "+below+" may not ") || len(e.Errors) != 0 {
						t.Errorf("as %s: %+v", below, e)
					}
				}
			})
		}
	})
}

// The 403 bodies are the ones clients have always seen.
func TestForbiddenBodies(t *testing.T) {
	env := apitest.New(t)
	acme := env.Tenant("acme")
	viewer := acme.User(auth.RoleViewer)
	e := acme.Do("GET", "/api/1.0/users", acme.Token(viewer, auth.AllScopes...), nil).Status(t, http.StatusForbidden).Err(t)
	if e.Message != "role viewer may not list users" {
		t.Errorf("listUsers as viewer: %q", e.Message)
	}
	e = acme.Do("POST", "/api/1.0/clients", acme.Token(viewer, auth.AllScopes...), map[string]any{
		"company_name": "A", "org_number": "1", "country": "SE", "credit_limit": 1,
	}).Status(t, http.StatusForbidden).Err(t)
	if e.Message != "role viewer may not perform this action" {
		t.Errorf("createClient as viewer: %q", e.Message)
	}
}

// leastRole is the lowest role an action allows and the role just below it
// ("" when every role may).
func leastRole(a auth.Action) (least, below string) {
	switch a {
	case auth.Admin:
		return auth.RoleAdmin, auth.RoleMember
	case auth.Write:
		return auth.RoleMember, auth.RoleViewer
	default:
		return auth.RoleViewer, ""
	}
}

// fillPath puts a well-formed value in every path parameter (a UUID where
// the schema says so, else 1); the resources need not exist.
func fillPath(t *testing.T, o apiOp) string {
	t.Helper()
	params := append(slices.Clone(o.item.Parameters), o.op.Parameters...)
	path := o.path
	for _, p := range params {
		if p.Value == nil || p.Value.In != openapi3.ParameterInPath {
			continue
		}
		v := "1"
		if s := p.Value.Schema; s != nil && s.Value != nil && s.Value.Format == "uuid" {
			v = uuid.NewString()
		}
		path = strings.ReplaceAll(path, "{"+p.Value.Name+"}", v)
	}
	if strings.Contains(path, "{") {
		t.Fatalf("%s: unfilled path parameter in %s", o.op.OperationID, path)
	}
	return path
}

// exampleBody is the spec's first example of the JSON request body (nil
// without a body).
func exampleBody(t *testing.T, o apiOp) any {
	t.Helper()
	if o.op.RequestBody == nil || o.op.RequestBody.Value == nil {
		return nil
	}
	mt := o.op.RequestBody.Value.Content.Get("application/json")
	if mt == nil {
		t.Fatalf("%s: no JSON request body", o.op.OperationID)
	}
	var v any
	switch {
	case mt.Example != nil:
		v = mt.Example
	case len(mt.Examples) > 0:
		names := make([]string, 0, len(mt.Examples))
		for n := range mt.Examples {
			names = append(names, n)
		}
		sort.Strings(names)
		v = mt.Examples[names[0]].Value.Value
	default:
		t.Fatalf("%s: the request body has no example", o.op.OperationID)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
