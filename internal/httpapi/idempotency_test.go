package httpapi_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/idempotency"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/openapi"
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
// path is 422, recorded in the audit log; another key is another request;
// keys are the app's own.
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
		if len(e.Errors["idempotency_key"]) == 0 || e.Code != models.ErrorCodeIdempotencyMismatch {
			t.Fatalf("errors = %v, code %v; want idempotency_key, idempotency_mismatch", e.Errors, e.Code)
		}
		actTok := acme.Token(user, auth.ScopeActsWrite)
		acme.DoHeader("POST", "/api/1.0/acts", actTok, map[string]any{"client_id": 1, "template_id": 1, "title": "x"}, withKey("key-1")).
			Status(t, http.StatusUnprocessableEntity)
		if second.Header.Get("Original-Request") != first.Header.Get("request_id") || first.Header.Get("request_id") == "" {
			t.Fatalf("replay's Original-Request %q; want the first request's id %q", second.Header.Get("Original-Request"), first.Header.Get("request_id"))
		}

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

		// Each refusal (another body, another path) is one audit record
		// by the caller, the key's digest as target; the replay, the new
		// key, another app's and another tenant's key of the same name
		// ran, and record nothing.
		var refused []audit.Row
		if err := env.DB.Where("action = ?", audit.IdempotentReplayRefused).Order("tenant_id, id").Find(&refused).Error; err != nil {
			t.Fatal(err)
		}
		if len(refused) != 2 {
			t.Fatalf("%d refusals recorded, want 2: %+v", len(refused), refused)
		}
		for _, r := range refused {
			if r.TenantID != acme.Tenant.ID || r.ActorType != audit.ActorApp || r.ActorUserID == nil || *r.ActorUserID != user ||
				r.ActorClientID == nil || *r.ActorClientID != "test-app" ||
				r.TargetType != audit.TargetIdempotencyKey || r.TargetID != idempotency.Digest([]byte("key-1")) ||
				r.Outcome != audit.Failure || r.RequestID == "" || r.RequestID == first.Header.Get("request_id") {
				t.Errorf("refusal recorded as %+v", r)
			}
		}
	})
}

// What is kept. A 4xx of the handler's own rules (no such client, a
// duplicate email) changed nothing, and its answer is kept: the retry gets
// it again, replayed, and never loops on it; a corrected body needs a new
// key. A request refused before the handler (validation, a malformed key)
// keeps nothing, and the key still runs the corrected request.
func TestIdempotencyKeyKeepsDecidedFailures(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		tok := acme.Token(acme.User(auth.RoleMember), auth.ScopeClientsWrite, auth.ScopeActsWrite)

		// A business-rule failure inside the handler (no such client).
		act := map[string]any{"client_id": 99, "template_id": 99, "title": "Q3"}
		first := acme.DoHeader("POST", "/api/1.0/acts", tok, act, withKey("k")).Status(t, http.StatusBadRequest)
		again := acme.DoHeader("POST", "/api/1.0/acts", tok, act, withKey("k")).Status(t, http.StatusBadRequest)
		if !bytes.Equal(first.Body, again.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("the kept 400 was not replayed: %s / %s %v", first.Body, again.Body, again.Header)
		}
		if n := tenantRows(t, acme, "idempotency_keys"); n != 1 {
			t.Fatalf("%d keys stored; want 1", n)
		}
		e := acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("k")).Status(t, http.StatusUnprocessableEntity).Err(t)
		if e.Code != models.ErrorCodeIdempotencyMismatch {
			t.Fatalf("another request with a spent key: %+v", e)
		}

		// Refused by validation: nothing kept, the key runs the fixed body.
		bad := map[string]any{"company_name": "", "org_number": "1", "country": "NO"}
		acme.DoHeader("POST", "/api/1.0/clients", tok, bad, withKey("v")).Status(t, http.StatusBadRequest)
		acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("v")).Status(t, http.StatusCreated)
		for _, bad := range []string{strings.Repeat("k", 256), "tab\there", "ünïcode"} {
			e := acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey(bad)).Status(t, http.StatusBadRequest).Err(t)
			if e.Message == "" || e.Code != models.ErrorCodeValidationFailed {
				t.Fatalf("key %q: %+v", bad, e)
			}
		}
		if n := tenantRows(t, acme, "clients"); n != 1 {
			t.Fatalf("%d clients; want 1", n)
		}

		// A duplicate email: 409 duplicate, kept, replayed, never retried
		// into a loop.
		admin := acme.Token(acme.User(auth.RoleAdmin), auth.ScopeUsersWrite)
		u := map[string]any{"email": "dup@acme.example.com", "name": "Dup", "role": "viewer"}
		acme.Do("POST", "/api/1.0/users", admin, u).Status(t, http.StatusCreated)
		d1 := acme.DoHeader("POST", "/api/1.0/users", admin, u, withKey("u")).Status(t, http.StatusConflict)
		d2 := acme.DoHeader("POST", "/api/1.0/users", admin, u, withKey("u")).Status(t, http.StatusConflict)
		if e := d2.Err(t); e.Code != models.ErrorCodeDuplicate || d2.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(d1.Body, d2.Body) {
			t.Fatalf("duplicate retried: %s %v", d2.Body, d2.Header)
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

// A replay is authorized exactly as a fresh request: a caller the
// operation refuses gets the refusal, never the stored body (and with it
// the secret it showed once), and another user of the same app who picks
// the same key gets their own result.
func TestIdempotencyReplayIsAuthorized(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		admin := acme.User(auth.RoleAdmin)
		member, other, viewer := acme.User(auth.RoleMember), acme.User(auth.RoleMember), acme.User(auth.RoleViewer)
		refused := func(what string, r *apitest.Response, secret string) {
			t.Helper()
			if r.Code != http.StatusForbidden && r.Code != http.StatusNotFound {
				t.Errorf("%s: %d %s; want 403 or 404", what, r.Code, r.Body)
			}
			if r.Header.Get("Idempotent-Replayed") != "" || bytes.Contains(r.Body, []byte(secret)) {
				t.Errorf("%s: got the stored result: %s", what, r.Body)
			}
		}

		// POST /users: the one-time password.
		u := map[string]any{"email": "new.admin@acme.example.com", "name": "New Admin", "role": "admin"}
		var created models.UserCreated
		acme.DoHeader("POST", "/api/1.0/users", acme.Token(admin, auth.ScopeUsersWrite), u, withKey("K")).
			Status(t, http.StatusCreated).Decode(t, &created)
		if created.OneTimePassword == nil || *created.OneTimePassword == "" {
			t.Fatal("no one-time password generated")
		}
		otp := *created.OneTimePassword
		refused("member replaying POST /users", acme.DoHeader("POST", "/api/1.0/users", acme.Token(member, auth.ScopeUsersWrite), u, withKey("K")), otp)
		refused("viewer replaying POST /users", acme.DoHeader("POST", "/api/1.0/users", acme.Token(viewer, auth.ScopeUsersWrite), u, withKey("K")), otp)
		refused("admin token without users:write", acme.DoHeader("POST", "/api/1.0/users", acme.Token(admin, auth.ScopeUsersRead), u, withKey("K")), otp)
		// Another admin of the same app: its own request, which finds the
		// email taken.
		r := acme.DoHeader("POST", "/api/1.0/users", acme.Token(acme.User(auth.RoleAdmin), auth.ScopeUsersWrite), u, withKey("K")).Status(t, http.StatusConflict)
		if r.Header.Get("Idempotent-Replayed") != "" || bytes.Contains(r.Body, []byte(otp)) {
			t.Fatalf("another admin got the stored result: %s", r.Body)
		}
		// The first admin's retry still gets its own result.
		again := acme.DoHeader("POST", "/api/1.0/users", acme.Token(admin, auth.ScopeUsersWrite), u, withKey("K")).Status(t, http.StatusCreated)
		if again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Contains(again.Body, []byte(otp)) {
			t.Fatalf("the creator's retry: %s %v", again.Body, again.Header)
		}

		// POST /webhooks: the signing secret.
		hook := map[string]any{"event": "act.created", "target": "https://hooks.example.com/k"}
		var wh models.WebhookWithSecret
		acme.DoHeader("POST", "/api/1.0/webhooks", acme.Token(member, auth.ScopeWebhooksWrite, auth.ScopeActsRead), hook, withKey("W")).
			Status(t, http.StatusCreated).Decode(t, &wh)
		refused("viewer replaying POST /webhooks", acme.DoHeader("POST", "/api/1.0/webhooks", acme.Token(viewer, auth.ScopeWebhooksWrite, auth.ScopeActsRead), hook, withKey("W")), wh.Secret)
		refused("token without webhooks:write", acme.DoHeader("POST", "/api/1.0/webhooks", acme.Token(member, auth.ScopeWebhooksRead), hook, withKey("W")), wh.Secret)
		var own models.WebhookWithSecret
		ro := acme.DoHeader("POST", "/api/1.0/webhooks", acme.Token(other, auth.ScopeWebhooksWrite, auth.ScopeActsRead), hook, withKey("W")).
			Status(t, http.StatusCreated).Decode(t, &own)
		if ro.Header.Get("Idempotent-Replayed") != "" || own.Id == wh.Id || own.Secret == wh.Secret {
			t.Fatalf("another member got the first member's registration: %s", ro.Body)
		}

		// POST /webhooks/{id}/rotate-secret: the new secret.
		path := "/api/1.0/webhooks/" + strconv.FormatInt(wh.Id, 10) + "/rotate-secret"
		var rot models.WebhookWithSecret
		acme.DoHeader("POST", path, acme.Token(member, auth.ScopeWebhooksWrite), nil, withKey("R")).Status(t, http.StatusOK).Decode(t, &rot)
		refused("another member replaying rotate-secret", acme.DoHeader("POST", path, acme.Token(other, auth.ScopeWebhooksWrite), nil, withKey("R")), rot.Secret)
		refused("viewer replaying rotate-secret", acme.DoHeader("POST", path, acme.Token(viewer, auth.ScopeWebhooksWrite), nil, withKey("R")), rot.Secret)
		if n := tenantRows(t, acme, "webhooks"); n != 2 {
			t.Fatalf("%d registrations; want 2", n)
		}
	})
}

// Nothing secret at rest: after keyed requests that answered with a
// webhook secret, a rotated secret and a generated password, neither the
// database (on SQLite its files, byte for byte; on PostgreSQL every row of
// the keys' table and of the tables the requests wrote) holds the secret or
// the password.
func TestIdempotencySecretsNotAtRest(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		tok := acme.AdminToken()
		var hook, rot models.WebhookWithSecret
		acme.DoHeader("POST", "/api/1.0/webhooks", tok, map[string]any{"event": "act.created", "target": "https://hooks.example.com/s"}, withKey("w")).
			Status(t, http.StatusCreated).Decode(t, &hook)
		acme.DoHeader("POST", "/api/1.0/webhooks/"+strconv.FormatInt(hook.Id, 10)+"/rotate-secret", tok, nil, withKey("r")).
			Status(t, http.StatusOK).Decode(t, &rot)
		var u models.UserCreated
		acme.DoHeader("POST", "/api/1.0/users", tok, map[string]any{"email": "otp@acme.example.com", "name": "O", "role": "member"}, withKey("u")).
			Status(t, http.StatusCreated).Decode(t, &u)
		var otp models.OneTimePassword
		acme.DoHeader("POST", "/api/1.0/users/"+strconv.FormatInt(u.User.Id, 10)+"/one-time-password", tok, nil, withKey("o")).
			Status(t, http.StatusOK).Decode(t, &otp)
		secrets := map[string]string{"webhook secret": hook.Secret, "rotated secret": rot.Secret, "one-time password": *u.OneTimePassword,
			"reissued one-time password": otp.OneTimePassword}
		for what, s := range secrets {
			if len(s) < 16 {
				t.Fatalf("%s %q: too short to search for", what, s)
			}
		}
		var stored []byte
		if env.DB.Dialect == db.SQLite {
			if err := env.DB.Exec("PRAGMA wal_checkpoint(PASSIVE)").Error; err != nil {
				t.Fatal(err)
			}
			var seq int
			var name, file string
			if err := env.DB.Raw("PRAGMA database_list").Row().Scan(&seq, &name, &file); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{file, file + "-wal"} {
				b, err := os.ReadFile(f)
				if err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				stored = append(stored, b...)
			}
		} else {
			for _, table := range []string{"idempotency_keys", "webhooks", "users", "events"} {
				var rows []string
				if err := env.DB.Raw("SELECT t::text FROM " + table + " t").Scan(&rows).Error; err != nil {
					t.Fatal(err)
				}
				stored = append(stored, strings.Join(rows, "\n")...)
			}
		}
		if !bytes.Contains(stored, []byte("otp@acme.example.com")) {
			t.Fatal("the search does not see what was written")
		}
		for what, s := range secrets {
			if bytes.Contains(stored, []byte(s)) {
				t.Errorf("the %s is readable in the database", what)
			}
		}
		// And the replays still show them to their owner.
		r := acme.DoHeader("POST", "/api/1.0/users", tok, map[string]any{"email": "otp@acme.example.com", "name": "O", "role": "member"}, withKey("u")).
			Status(t, http.StatusCreated)
		if !bytes.Contains(r.Body, []byte(*u.OneTimePassword)) {
			t.Fatal("the replay lost the password")
		}
	})
}

// A database outage in the middle of a keyed request: the request fails
// with 503 and keeps nothing, and the retry with its key runs as soon as
// the database is back (no "still running" 409 for a lease).
func TestIdempotencyRetryAfterOutage(t *testing.T) {
	d := testdb.Postgres(t)
	var down atomic.Bool
	var restore func()
	env := apitest.New(t, apitest.WithDB(d), apitest.WithApp(
		app.WithTenants(tenant.NewStore(d, tenant.WithCacheTTL(time.Hour))),
		app.WithIdempotencyFault(func(context.Context) {
			if down.CompareAndSwap(false, true) {
				restore = testdb.TakeDown(t, d)
			}
		})))
	acme := env.Tenant("acme")
	tok := acme.Token(acme.User(auth.RoleMember), auth.ScopeClientsWrite)
	// The COMMIT finds its connection gone, which the service cannot tell
	// from one lost after the COMMIT was sent: unavailable or
	// outcome_unknown, a 503 either way, and the retry with the key decides.
	e := acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("o")).Status(t, http.StatusServiceUnavailable).Err(t)
	if e.Code != models.ErrorCodeUnavailable && e.Code != models.ErrorCodeOutcomeUnknown {
		t.Fatalf("during the outage: %+v", e)
	}
	restore()
	start := time.Now()
	var r *apitest.Response
	for {
		r = acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("o"))
		if r.Code != http.StatusServiceUnavailable || time.Since(start) > 10*time.Second {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.Status(t, http.StatusCreated)
	if r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatal("the failed request's result was kept")
	}
	if n := tenantRows(t, acme, "clients"); n != 1 {
		t.Fatalf("%d clients; want 1", n)
	}
	t.Logf("the retry succeeded %v after the database came back", time.Since(start))
}

// The error codes the service sends are the spec's ErrorCode enumeration,
// both ways.
func TestErrorCodesAreTheSpecs(t *testing.T) {
	spec, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	var inSpec []string
	for _, v := range spec.Components.Schemas["ErrorCode"].Value.Enum {
		inSpec = append(inSpec, v.(string))
	}
	var inGo []string
	for _, c := range apperr.Codes {
		inGo = append(inGo, string(c))
	}
	slices.Sort(inSpec)
	slices.Sort(inGo)
	if !slices.Equal(inSpec, inGo) {
		t.Fatalf("ErrorCode in the spec %v; apperr.Codes %v", inSpec, inGo)
	}
	for k, c := range apperr.KindCode {
		if !slices.Contains(inGo, string(c)) {
			t.Errorf("kind %s's code %s is not listed", k, c)
		}
	}
}

// What a key costs in statements: a keyed POST /clients runs the unkeyed
// request's statements inside the key's transaction, plus the claim (an
// advisory lock on PostgreSQL), the look-up, the savepoints and the key's
// INSERT; a replay is the claim, the look-up and, on PostgreSQL, the
// durability barrier (db.WaitDurable).
func TestIdempotencyStatementCount(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			d := testdb.Open(t, dialect)
			counted, count := d.CountQueries()
			env := apitest.New(t, apitest.WithDB(d), apitest.WithApp(app.WithDB(counted)))
			acme := env.Tenant("acme")
			tok := acme.Token(acme.User(auth.RoleMember), auth.ScopeClientsWrite)
			measure := func(key string) int {
				before := count()
				h := http.Header{}
				if key != "" {
					h = withKey(key)
				}
				acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, h).Status(t, http.StatusCreated)
				return count() - before
			}
			measure("") // warm caches (tenant, token)
			plain, keyed, replay := measure(""), measure("k"), measure("k")
			extra, replays := 6, 2 // look-up, 2 × (SAVEPOINT, RELEASE), INSERT; look-up (and claim)
			if d.Dialect == db.Postgres {
				extra++   // pg_try_advisory_xact_lock
				replays++ // the barrier
			}
			t.Logf("POST /clients: %d statements; with a new key %d; a replay %d", plain, keyed, replay)
			if keyed != plain+extra || replay > replays {
				t.Fatalf("plain %d, keyed %d (want %d), replay %d (want at most %d)", plain, keyed, plain+extra, replay, replays)
			}
		})
	}
}
