package httpapi_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
	"github.com/finsvc/finsvc/openapi"
)

// TestRotateSecretOverlap: POST /webhooks/{id}/rotate-secret takes an
// optional previous_secret_expires_in (0, 86400 or 604800 seconds; 86400
// without a body or without the member); any other value is a 400 in the
// error format, and changes nothing.
func TestRotateSecretOverlap(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := newWebhookEnv(t, env, "acme")
		wh := acme.create(t, "act.fetch_data", "https://hooks.example.com/h")
		path := fmt.Sprintf("/api/1.0/webhooks/%d/rotate-secret", wh.Id)
		for _, tc := range []struct {
			name string
			body any
			want time.Duration // -1: no previous secret
		}{
			{"no body", nil, 24 * time.Hour},
			{"empty object", map[string]any{}, 24 * time.Hour},
			{"now", map[string]any{"previous_secret_expires_in": 0}, -1},
			{"24 hours", map[string]any{"previous_secret_expires_in": 86400}, 24 * time.Hour},
			{"7 days", map[string]any{"previous_secret_expires_in": 604800}, 7 * 24 * time.Hour},
		} {
			before := time.Now().Add(-time.Second)
			var rot models.WebhookWithSecret
			acme.Do("POST", path, acme.tok, tc.body).Status(t, http.StatusOK).Decode(t, &rot)
			after := time.Now().Add(time.Second)
			switch at := rot.PreviousSecretExpiresAt; {
			case tc.want < 0 && at != nil:
				t.Errorf("%s: previous secret until %v, want none", tc.name, at)
			case tc.want > 0 && (at == nil || at.Before(before.Add(tc.want)) || at.After(after.Add(tc.want))):
				t.Errorf("%s: previous secret until %v, want in %v", tc.name, at, tc.want)
			}
		}
		var last models.Webhook
		acme.Do("GET", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id), acme.tok, nil).Status(t, http.StatusOK).Decode(t, &last)
		for _, bad := range []any{
			map[string]any{"previous_secret_expires_in": 3600},
			map[string]any{"previous_secret_expires_in": -86400},
			map[string]any{"previous_secret_expires_in": "86400"},
			map[string]any{"previous_secret_expires_in": 86400.5},
			map[string]any{"overlap": 86400},
			`[86400]`,
		} {
			e := acme.Do("POST", path, acme.tok, bad).Status(t, http.StatusBadRequest).Err(t)
			if e.Message == "" {
				t.Errorf("%v: refusal without a message", bad)
			}
		}
		var now models.Webhook
		acme.Do("GET", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id), acme.tok, nil).Status(t, http.StatusOK).Decode(t, &now)
		if !now.UpdatedAt.Equal(last.UpdatedAt) {
			t.Errorf("a refused rotation changed the registration (updated %v, was %v)", now.UpdatedAt, last.UpdatedAt)
		}
	}, withSecret(false))
}

// TestRotateSecretIdempotencyKeyCoversTheOverlap: the body is part of an
// Idempotency-Key's request, so the same key with another overlap is
// refused (422) and rotates nothing, and the same key with the same
// overlap replays the first rotation.
func TestRotateSecretIdempotencyKeyCoversTheOverlap(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := newWebhookEnv(t, env, "acme")
		wh := acme.create(t, "act.fetch_data", "https://hooks.example.com/h")
		path := fmt.Sprintf("/api/1.0/webhooks/%d/rotate-secret", wh.Id)
		week := map[string]any{"previous_secret_expires_in": 604800}
		var first, again models.WebhookWithSecret
		acme.DoHeader("POST", path, acme.tok, week, withKey("rot-1")).Status(t, http.StatusOK).Decode(t, &first)
		e := acme.DoHeader("POST", path, acme.tok, map[string]any{"previous_secret_expires_in": 0}, withKey("rot-1")).
			Status(t, http.StatusUnprocessableEntity).Err(t)
		if e.Code != models.ErrorCodeIdempotencyMismatch {
			t.Fatalf("another overlap under the same key: code %v, errors %v", e.Code, e.Errors)
		}
		acme.DoHeader("POST", path, acme.tok, nil, withKey("rot-1")).Status(t, http.StatusUnprocessableEntity)
		r := acme.DoHeader("POST", path, acme.tok, week, withKey("rot-1")).Status(t, http.StatusOK)
		r.Decode(t, &again)
		if r.Header.Get("Idempotent-Replayed") != "true" || again.Secret != first.Secret {
			t.Fatalf("the same key and overlap did not replay the first rotation")
		}
		var now models.Webhook
		acme.Do("GET", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id), acme.tok, nil).Status(t, http.StatusOK).Decode(t, &now)
		if !now.UpdatedAt.Equal(first.UpdatedAt) {
			t.Fatal("a refused key rotated the secret again")
		}
	}, withSecret(false))
}

// TestRotationOverlapsOfTheSpec: the spec's previous_secret_expires_in
// enum is registry.RotationOverlaps in seconds, and its default the
// registry's default.
func TestRotationOverlapsOfTheSpec(t *testing.T) {
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	p := doc.Components.Schemas["WebhookSecretRotation"].Value.Properties["previous_secret_expires_in"].Value
	var inSpec, inGo []int64
	for _, v := range p.Enum {
		inSpec = append(inSpec, int64(v.(float64)))
	}
	for _, d := range registry.RotationOverlaps {
		inGo = append(inGo, int64(d/time.Second))
	}
	if !slices.Equal(inSpec, inGo) {
		t.Errorf("spec enum %v, registry %v", inSpec, inGo)
	}
	if def := int64(p.Default.(float64)); def != int64(registry.DefaultRotationOverlap/time.Second) {
		t.Errorf("spec default %d, registry %v", def, registry.DefaultRotationOverlap)
	}
}
