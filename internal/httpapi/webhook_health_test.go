package httpapi_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
)

// The registration shows its endpoint's health (kept by the delivery
// workers' circuit breaker) and when and why the service disabled it;
// activating it again clears both.
func TestWebhookHealthAndReenable(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := newWebhookEnv(t, env, "acme")
		wh := acme.create(t, "act.created", "https://hooks.example.com/h")
		if h := wh.Health; h.State != models.WebhookHealthHealthy || h.ConsecutiveFailures != 0 || h.LastSuccessAt != nil ||
			h.LastFailureAt != nil || h.LastFailureReason != nil || h.FailingSince != nil || h.BackingOffUntil != nil || wh.DisabledAt != nil {
			t.Fatalf("new registration: health %+v, disabled_at %v", h, wh.DisabledAt)
		}
		path := fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id)
		row := env.DB.Table("webhooks").Where("tenant_id = ? AND id = ?", acme.Tenant.ID, wh.Id)
		now := time.Now().UTC().Truncate(time.Second)
		if err := row.Updates(map[string]any{
			"consecutive_failures": 4, "last_failure_at": now, "last_failure_reason": "target answered 503",
			"failing_since": now.Add(-time.Hour), "circuit_open_until": now.Add(time.Minute),
			"last_success_at": now.Add(-2 * time.Hour),
		}).Error; err != nil {
			t.Fatal(err)
		}
		var got models.Webhook
		acme.Do("GET", path, acme.tok, nil).Status(t, 200).Decode(t, &got)
		h := got.Health
		if h.State != models.WebhookHealthBackingOff || h.ConsecutiveFailures != 4 || h.LastFailureReason == nil || *h.LastFailureReason != "target answered 503" ||
			h.BackingOffUntil == nil || !h.BackingOffUntil.Equal(now.Add(time.Minute)) || h.FailingSince == nil || !h.FailingSince.Equal(now.Add(-time.Hour)) ||
			h.LastSuccessAt == nil || !h.LastSuccessAt.Equal(now.Add(-2*time.Hour)) {
			t.Fatalf("backing off: %+v", h)
		}
		// The pause is over: failing, and no backing_off_until.
		row = env.DB.Table("webhooks").Where("tenant_id = ? AND id = ?", acme.Tenant.ID, wh.Id)
		row.Update("circuit_open_until", now.Add(-time.Minute))
		acme.Do("GET", path, acme.tok, nil).Status(t, 200).Decode(t, &got)
		if got.Health.State != models.WebhookHealthFailing || got.Health.BackingOffUntil != nil {
			t.Fatalf("after the pause: %+v", got.Health)
		}

		// Disabled by the service, then activated again by PATCH.
		row = env.DB.Table("webhooks").Where("tenant_id = ? AND id = ?", acme.Tenant.ID, wh.Id)
		row.Updates(map[string]any{"active": false, "disabled_reason": "every delivery attempt failed for 5 days", "disabled_at": now})
		acme.Do("GET", path, acme.tok, nil).Status(t, 200).Decode(t, &got)
		if got.Active || got.DisabledAt == nil || !got.DisabledAt.Equal(now) || got.DisabledReason == nil {
			t.Fatalf("disabled: %+v", got)
		}
		acme.Do("PATCH", path, acme.tok, map[string]any{"active": true}).Status(t, 200).Decode(t, &got)
		if !got.Active || got.DisabledAt != nil || got.DisabledReason != nil || got.Health.State != models.WebhookHealthHealthy ||
			got.Health.ConsecutiveFailures != 0 || got.Health.FailingSince != nil {
			t.Fatalf("re-enabled: %+v", got)
		}
		// The history of the endpoint stays.
		if got.Health.LastFailureAt == nil || got.Health.LastSuccessAt == nil {
			t.Fatalf("re-enabling erased the last success/failure: %+v", got.Health)
		}
	}, withSecret(false))
}
