package httpapi_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/users"
)

// A response that carries a secret (a webhook's signing secret, a
// one-time password) and the audit log and its export are never cached:
// Cache-Control: no-store, as the spec declares on each, errors included;
// a response without a secret does not say so.
func TestSecretsAreNotCached(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		admin := acme.AdminToken()
		noStore := func(what string, r *apitest.Response) {
			t.Helper()
			if got := r.Header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("%s (%d): Cache-Control %q, want no-store", what, r.Code, got)
			}
		}
		var created models.UserCreated
		r := acme.Do("POST", "/api/1.0/users", admin, map[string]any{"email": "kari@acme.example.com", "role": "member"}).
			Status(t, http.StatusCreated).Decode(t, &created)
		noStore("POST /users", r)
		uid := strconv.FormatInt(created.User.Id, 10)
		noStore("POST /users/{id}/one-time-password", acme.Do("POST", "/api/1.0/users/"+uid+"/one-time-password", admin, nil).Status(t, http.StatusOK))
		var wh models.WebhookWithSecret
		r = acme.Do("POST", "/api/1.0/webhooks", admin, map[string]any{"event": "act.created", "target": "https://hooks.example.com/a"}).
			Status(t, http.StatusCreated).Decode(t, &wh)
		noStore("POST /webhooks", r)
		noStore("POST /webhooks (refused)", acme.Do("POST", "/api/1.0/webhooks", admin, map[string]any{"event": "no.such", "target": "https://hooks.example.com/a"}).Status(t, http.StatusBadRequest))
		noStore("rotate-secret", acme.Do("POST", "/api/1.0/webhooks/"+strconv.FormatInt(wh.Id, 10)+"/rotate-secret", admin, nil).Status(t, http.StatusOK))
		noStore("GET /audit-log", acme.Do("GET", "/api/1.0/audit-log", admin, nil).Status(t, http.StatusOK))
		noStore("GET /audit-log/export", acme.Do("GET", "/api/1.0/audit-log/export", admin, nil).Status(t, http.StatusOK))

		if got := acme.Do("GET", "/api/1.0/webhooks", admin, nil).Status(t, http.StatusOK).Header.Get("Cache-Control"); got == "no-store" {
			t.Errorf("GET /webhooks, without a secret, says no-store: the header is not the spec's per operation")
		}
	})
}

// POST /users without a password returns when the generated one-time
// password expires, as POST /users/{id}/one-time-password does; with a
// password, neither.
func TestCreateUserOneTimePasswordExpiry(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		admin := acme.AdminToken()
		before := time.Now().Add(-time.Second)
		var created models.UserCreated
		acme.Do("POST", "/api/1.0/users", admin, map[string]any{"email": "kari@acme.example.com", "role": "member"}).
			Status(t, http.StatusCreated).Decode(t, &created)
		if created.OneTimePassword == nil || created.ExpiresAt == nil ||
			created.ExpiresAt.Before(before.Add(users.OneTimePasswordTTL)) || created.ExpiresAt.After(time.Now().Add(users.OneTimePasswordTTL)) {
			t.Fatalf("created %+v (expires_at %v), want the one-time password's expiry in 72 h", created, created.ExpiresAt)
		}
		var chosen models.UserCreated
		acme.Do("POST", "/api/1.0/users", admin, map[string]any{"email": "ola@acme.example.com", "role": "member", "password": "cantaloupe in a red wheelbarrow"}).
			Status(t, http.StatusCreated).Decode(t, &chosen)
		if chosen.OneTimePassword != nil || chosen.ExpiresAt != nil {
			t.Fatalf("with a chosen password: %+v", chosen)
		}
	})
}

// previous_secret_expires_in is one of the enum's numbers: null is not
// one of them (the schema is not nullable), so it is refused with 400
// naming the field, and nothing is rotated.
func TestRotateRefusesNullOverlap(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		admin := acme.AdminToken()
		var wh models.WebhookWithSecret
		acme.Do("POST", "/api/1.0/webhooks", admin, map[string]any{"event": "act.created", "target": "https://hooks.example.com/a"}).
			Status(t, http.StatusCreated).Decode(t, &wh)
		path := "/api/1.0/webhooks/" + strconv.FormatInt(wh.Id, 10) + "/rotate-secret"
		wantField(t, acme.Do("POST", path, admin, []byte(`{"previous_secret_expires_in": null}`)), "previous_secret_expires_in")
		var got models.Webhook
		acme.Do("GET", "/api/1.0/webhooks/"+strconv.FormatInt(wh.Id, 10), admin, nil).Status(t, http.StatusOK).Decode(t, &got)
		if !got.UpdatedAt.Equal(wh.UpdatedAt) {
			t.Fatalf("a refused rotation changed the registration: %v → %v", wh.UpdatedAt, got.UpdatedAt)
		}
	})
}
