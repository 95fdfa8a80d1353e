package httpapi_test

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/pkg/apitest"
	"github.com/finsvc/finsvc/pkg/auth"
)

func withKey(k string) http.Header { return http.Header{"Idempotency-Key": {k}} }

func tenantRows(t *testing.T, te *apitest.TenantEnv, table string) int64 {
	t.Helper()
	var n int64
	if err := te.DB.Table(table).Where("tenant_id = ?", te.Tenant.ID).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// A retried POST with the same key and body gets the first response, byte
// for byte, and creates nothing more; the same key with another body or
// path is 422; another key is another request; keys are the app's own.
func TestIdempotencyKeyReplaysTheFirstResult(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		user := acme.User(auth.RoleMember)
		tok := acme.Token(user, auth.ScopeClientsRead, auth.ScopeClientsWrite)

		first := acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("key-1")).Status(t, http.StatusCreated)
		if first.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first response marked as replayed")
		}
		// The same values re-serialised (other key order, other spacing)
		// are the same request.
		again := `{ "credit_limit": 250000.00, "country": "NO", "org_number": "923456781", "company_name": "Nordic Timber AS" }`
		second := acme.DoHeader("POST", "/api/1.0/clients", tok, again, withKey("key-1")).Status(t, http.StatusCreated)
		if !bytes.Equal(first.Body, second.Body) || second.Header.Get("Idempotent-Replayed") != "true" ||
			second.Header.Get("Content-Type") != first.Header.Get("Content-Type") {
			t.Fatalf("replay differs:\n%s %v\n%s %v", first.Body, first.Header, second.Body, second.Header)
		}
		if n := tenantRows(t, acme, "clients"); n != 1 {
			t.Fatalf("%d clients after a retry; want 1", n)
		}

		other := map[string]any{"company_name": "Other AS", "org_number": "1", "country": "SE", "credit_limit": 1}
		e := acme.DoHeader("POST", "/api/1.0/clients", tok, other, withKey("key-1")).Status(t, http.StatusUnprocessableEntity).Err(t)
		if len(e.Errors["idempotency_key"]) == 0 {
			t.Fatalf("errors = %v; want idempotency_key", e.Errors)
		}
		tplTok := acme.Token(user, auth.ScopeTemplatesWrite)
		acme.DoHeader("POST", "/api/1.0/templates", tplTok, creditReviewJSON, withKey("key-1")).
			Status(t, http.StatusUnprocessableEntity)

		var c models.Client
		acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("key-2")).Status(t, http.StatusCreated).Decode(t, &c)
		if c.Id != 2 {
			t.Fatalf("a new key created client %d; want 2", c.Id)
		}
		// Another OAuth app's key of the same name is its own.
		appTok := acme.Tokens.Issue(&auth.Principal{TenantID: acme.Tenant.ID, UserID: user, Role: auth.RoleMember,
			ClientID: "other-app", Scopes: []string{auth.ScopeClientsWrite}})
		acme.DoHeader("POST", "/api/1.0/clients", appTok, nordic, withKey("key-1")).Status(t, http.StatusCreated)
		// So is another tenant's.
		globex := env.Tenant("globex")
		gTok := globex.Token(globex.User(auth.RoleMember), auth.ScopeClientsWrite)
		globex.DoHeader("POST", "/api/1.0/clients", gTok, nordic, withKey("key-1")).Status(t, http.StatusCreated)
		if n := tenantRows(t, acme, "clients"); n != 3 {
			t.Fatalf("%d clients; want 3", n)
		}
		// The key is stored as a digest only.
		var raw int64
		env.DB.Table("idempotency_keys").Where("key_hash = ?", "key-1").Count(&raw)
		if raw != 0 {
			t.Fatalf("a key stored as sent")
		}
	})
}

// A request that failed changed nothing and is not stored: a retry with
// the key and a corrected body runs. A malformed key is a 400.
func TestIdempotencyKeyFailuresAreNotStored(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		tok := acme.Token(acme.User(auth.RoleMember), auth.ScopeClientsWrite, auth.ScopeActsWrite)

		// A business-rule failure inside the handler (no such client).
		act := map[string]any{"client_id": 99, "template_id": 99, "title": "Q3"}
		acme.DoHeader("POST", "/api/1.0/acts", tok, act, withKey("k")).Status(t, http.StatusBadRequest)
		acme.DoHeader("POST", "/api/1.0/acts", tok, act, withKey("k")).Status(t, http.StatusBadRequest)
		if n := tenantRows(t, acme, "idempotency_keys"); n != 0 {
			t.Fatalf("%d keys stored after failures; want 0", n)
		}
		// The key is free for a different, valid request.
		acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("k")).Status(t, http.StatusCreated)

		for _, bad := range []string{strings.Repeat("k", 256), "tab\there", "ünïcode"} {
			e := acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey(bad)).Status(t, http.StatusBadRequest).Err(t)
			if e.Message == "" {
				t.Fatalf("key %q: empty error", bad)
			}
		}
		if n := tenantRows(t, acme, "clients"); n != 1 {
			t.Fatalf("%d clients; want 1", n)
		}
	})
}

// Creating an act with a key: the retry returns the same act and no second
// act.created event is queued.
func TestIdempotencyKeyEmitsOnce(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		admin := acme.User(auth.RoleAdmin)
		tok := acme.Token(admin, auth.AllScopes...)
		var c models.Client
		acme.Do("POST", "/api/1.0/clients", tok, nordic).Status(t, http.StatusCreated).Decode(t, &c)
		var tpl models.Template
		acme.Do("POST", "/api/1.0/templates", tok, creditReviewJSON).Status(t, http.StatusCreated).Decode(t, &tpl)
		acme.Do("POST", "/api/1.0/webhooks", tok, map[string]any{"event": "act.created", "target": "https://hooks.example.com/a"}).
			Status(t, http.StatusCreated)

		body := map[string]any{"client_id": c.Id, "template_id": tpl.Id, "title": "Q3 review"}
		var a1, a2 models.Act
		acme.DoHeader("POST", "/api/1.0/acts", tok, body, withKey("act-1")).Status(t, http.StatusCreated).Decode(t, &a1)
		acme.DoHeader("POST", "/api/1.0/acts", tok, body, withKey("act-1")).Status(t, http.StatusCreated).Decode(t, &a2)
		if a1.Uuid != a2.Uuid {
			t.Fatalf("retry created %s beside %s", a2.Uuid, a1.Uuid)
		}
		if n := tenantRows(t, acme, "acts"); n != 1 {
			t.Fatalf("%d acts; want 1", n)
		}
		var events int64
		env.DB.Table("events").Where("tenant_id = ? AND kind = ?", acme.Tenant.ID, "act.created").Count(&events)
		if events != 1 {
			t.Fatalf("%d act.created events; want 1", events)
		}
	})
}

// Racing retries of one request: exactly one runs. The others get the
// stored result or 409 while it runs; never a second client, never a 5xx.
func TestIdempotencyKeyConcurrentRetries(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		tok := acme.Token(acme.User(auth.RoleMember), auth.ScopeClientsWrite)
		const n = 12
		codes := make([]int, n)
		bodies := make([][]byte, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				r := acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("race"))
				codes[i], bodies[i] = r.Code, r.Body
			})
		}
		wg.Wait()
		var created []byte
		for i, c := range codes {
			switch c {
			case http.StatusCreated:
				if created != nil && !bytes.Equal(created, bodies[i]) {
					t.Fatalf("two different 201 bodies:\n%s\n%s", created, bodies[i])
				}
				created = bodies[i]
			case http.StatusConflict:
			default:
				t.Fatalf("request %d: %d %s", i, c, bodies[i])
			}
		}
		if created == nil {
			t.Fatalf("no request succeeded: %v", codes)
		}
		if got := tenantRows(t, acme, "clients"); got != 1 {
			t.Fatalf("%d clients from %d racing retries; want 1 (codes %v)", got, n, codes)
		}
	})
}
