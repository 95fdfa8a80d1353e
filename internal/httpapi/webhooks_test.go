package httpapi_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/keyring"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
	"github.com/finsvc/finsvc/pkg/webhooks/sign"
)

const testSecret = "test-global-secret-0123456789abcdef"

func withSecret(allowPrivate bool) apitest.Option {
	return apitest.WithConfig(func(c *config.Config) {
		c.Secret = testSecret
		c.WebhookAllowPrivate = allowPrivate
	})
}

type webhookEnv struct {
	*apitest.TenantEnv
	member, viewer int64
	tok            string // member with webhooks:read+write
}

func newWebhookEnv(t *testing.T, env *apitest.Env, slug string) *webhookEnv {
	te := env.Tenant(slug)
	m := te.User(auth.RoleMember)
	return &webhookEnv{TenantEnv: te, member: m, viewer: te.User(auth.RoleViewer),
		tok: te.Token(m, auth.ScopeWebhooksRead, auth.ScopeWebhooksWrite, auth.ScopeActsRead, auth.ScopeClientsRead)}
}

func (w *webhookEnv) create(t *testing.T, event, target string) models.WebhookWithSecret {
	t.Helper()
	var out models.WebhookWithSecret
	w.Do("POST", "/api/1.0/webhooks", w.tok, map[string]any{"event": event, "target": target}).Status(t, 201).Decode(t, &out)
	return out
}

func TestWebhookLifecycle(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := newWebhookEnv(t, env, "acme")
		before := time.Now().Add(-time.Second)
		wh := acme.create(t, "act.fetch_data", "https://hooks.example.com/finsvc?x=1")
		if wh.Id != 1 || wh.Event != "act.fetch_data" || wh.Target != "https://hooks.example.com/finsvc?x=1" || !wh.Active {
			t.Fatalf("created %+v", wh)
		}
		if err := sign.CheckSecret(wh.Secret); err != nil || !strings.HasPrefix(wh.Secret, "whsec_") {
			t.Fatalf("secret %q: %v", wh.Secret, err)
		}
		if wh.CreatedByUserId != acme.member || wh.CreatedByClientId == nil || *wh.CreatedByClientId != "test-app" {
			t.Fatalf("creator: user %d client %v", wh.CreatedByUserId, wh.CreatedByClientId)
		}
		if wh.PreviousSecretExpiresAt != nil || wh.CreatedAt.Before(before) {
			t.Fatalf("created %+v", wh)
		}

		// The secret is stored sealed: not in the row, but it opens to it.
		var row registry.Webhook
		if err := env.DB.Where("tenant_id = ? AND id = ?", acme.Tenant.ID, wh.Id).Take(&row).Error; err != nil {
			t.Fatal(err)
		}
		key := strings.TrimPrefix(wh.Secret, "whsec_")
		if strings.Contains(row.SecretCiphertext, key) || strings.Contains(row.SecretCiphertext, wh.Secret) {
			t.Fatal("secret stored in the clear")
		}
		box, _ := sealing.New(keyring.MustNew(testSecret))
		if got, err := registry.OpenSecrets(box, &row, time.Now()); err != nil || len(got) != 1 || got[0] != wh.Secret {
			t.Fatalf("sealed secret opens to %d secrets, %v", len(got), err)
		}

		// GET never shows the secret (only when a previous one stops).
		r := acme.Do("GET", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id), acme.tok, nil).Status(t, 200)
		if strings.Contains(string(r.Body), `"secret"`) || strings.Contains(string(r.Body), "whsec_") || strings.Contains(string(r.Body), wh.Secret) {
			t.Fatalf("GET shows a secret: %s", r.Body)
		}
		var got models.Webhook
		r.Decode(t, &got)
		if got.Id != wh.Id || got.Target != wh.Target {
			t.Fatalf("got %+v", got)
		}

		// List with pagination.
		acme.create(t, "act.created", "https://hooks.example.com/created")
		acme.create(t, "act.duplicated", "https://hooks.example.com/dup")
		var page models.WebhookList
		acme.Do("GET", "/api/1.0/webhooks?page=2&limit=2", acme.tok, nil).Status(t, 200).Decode(t, &page)
		if page.Meta != (models.PageMeta{CurrentPage: 2, PerPage: 2, Total: 3}) || len(page.Data) != 1 || page.Data[0].Event != "act.duplicated" {
			t.Fatalf("page 2: %+v", page)
		}
		r = acme.Do("GET", "/api/1.0/webhooks", acme.tok, nil).Status(t, 200)
		if strings.Contains(string(r.Body), `"secret"`) || strings.Contains(string(r.Body), "whsec_") {
			t.Fatal("list shows secrets")
		}
		r.Decode(t, &page)
		if page.Meta != (models.PageMeta{CurrentPage: 1, PerPage: 25, Total: 3}) || len(page.Data) != 3 {
			t.Fatalf("page 1: %+v", page.Meta)
		}

		// PATCH target and active.
		var upd models.Webhook
		acme.Do("PATCH", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id), acme.tok, map[string]any{"target": "https://new.example.com/h"}).Status(t, 200).Decode(t, &upd)
		if upd.Target != "https://new.example.com/h" || !upd.Active {
			t.Fatalf("patched %+v", upd)
		}
		acme.Do("PATCH", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id), acme.tok, map[string]any{"active": false}).Status(t, 200).Decode(t, &upd)
		if upd.Active || upd.Target != "https://new.example.com/h" {
			t.Fatalf("patched %+v", upd)
		}
		e := acme.Do("PATCH", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id), acme.tok, map[string]any{"target": "http://new.example.com/h"}).Status(t, 400).Err(t)
		if len(e.Errors["target"]) == 0 {
			t.Fatalf("errors %v", e.Errors)
		}
		acme.Do("PATCH", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id), acme.tok, map[string]any{}).Status(t, 400)

		// Rotation: a new secret, the old one still signs for 24h.
		var rot models.WebhookWithSecret
		acme.Do("POST", fmt.Sprintf("/api/1.0/webhooks/%d/rotate-secret", wh.Id), acme.tok, nil).Status(t, 200).Decode(t, &rot)
		if rot.Secret == wh.Secret || sign.CheckSecret(rot.Secret) != nil || rot.PreviousSecretExpiresAt == nil {
			t.Fatalf("rotated %+v", rot)
		}
		if d := time.Until(*rot.PreviousSecretExpiresAt); d < 23*time.Hour+59*time.Minute || d > 24*time.Hour+time.Minute {
			t.Fatalf("previous secret expires in %v", d)
		}
		if err := env.DB.Where("tenant_id = ? AND id = ?", acme.Tenant.ID, wh.Id).Take(&row).Error; err != nil {
			t.Fatal(err)
		}
		secrets, err := registry.OpenSecrets(box, &row, time.Now())
		if err != nil || len(secrets) != 2 || secrets[0] != rot.Secret || secrets[1] != wh.Secret {
			t.Fatalf("after rotation %d secrets, %v", len(secrets), err)
		}
		if s, _ := registry.OpenSecrets(box, &row, time.Now().Add(25*time.Hour)); len(s) != 1 {
			t.Fatalf("previous secret still signs after 25h: %d", len(s))
		}

		// DELETE, then it is gone.
		acme.Do("DELETE", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id), acme.tok, nil).Status(t, 204)
		acme.Do("GET", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id), acme.tok, nil).Status(t, 404)
		acme.Do("DELETE", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id), acme.tok, nil).Status(t, 404)
		acme.Do("POST", fmt.Sprintf("/api/1.0/webhooks/%d/rotate-secret", wh.Id), acme.tok, nil).Status(t, 404)
		acme.Do("PATCH", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id), acme.tok, map[string]any{"active": true}).Status(t, 404)
	}, withSecret(false))
}

func TestWebhookValidation(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := newWebhookEnv(t, env, "acme")
		for _, tc := range []struct{ event, target, field string }{
			{"act.fetch_data", "http://hooks.example.com/", "target"},
			{"act.fetch_data", "ftp://hooks.example.com/", "target"},
			{"act.fetch_data", "hooks.example.com/x", "target"},
			{"act.fetch_data", "https://", "target"},
			{"act.fetch_data", "https://user:pw@hooks.example.com/", "target"},
			{"act.fetch_data", "https://hooks.example.com/a b", "target"},
			{"act.fetch_data", "https://hooks.example.com:99999/", "target"},
			{"act.fetch_data", "https://127.0.0.1/", "target"},
			{"act.fetch_data", "https://10.0.0.1/", "target"},
			{"act.fetch_data", "https://169.254.169.254/latest", "target"},
			{"act.fetch_data", "https://[::1]/", "target"},
			{"act.fetch_data", "https://localhost/", "target"},
			{"act.fetch_data", "https://hooks.example.com/#frag", "target"},
			{"act.fetch_data", "", "target"},
			{"act.fetch_data", "https://hooks.example.com/\x00", "target"},
			{"act.exploded", "https://hooks.example.com/", "event"},
		} {
			e := acme.Do("POST", "/api/1.0/webhooks", acme.tok, map[string]any{"event": tc.event, "target": tc.target}).Status(t, 400).Err(t)
			if len(e.Errors[tc.field]) == 0 {
				t.Errorf("%s %q: errors %v, want errors.%s", tc.event, tc.target, e.Errors, tc.field)
			}
		}
		acme.Do("POST", "/api/1.0/webhooks", acme.tok, `{"event":"act.created"}`).Status(t, 400)
		acme.Do("POST", "/api/1.0/webhooks", acme.tok, `{"event":"act.created","target":"https://a.example.com","secret":"mine"}`).Status(t, 400)
		var n int64
		env.DB.Table("webhooks").Count(&n)
		if n != 0 {
			t.Fatalf("%d registrations written by invalid requests", n)
		}
	}, withSecret(false))
}

func TestWebhookAllowPrivateAcceptsHTTP(t *testing.T) {
	env := apitest.New(t, withSecret(true))
	acme := newWebhookEnv(t, env, "acme")
	wh := acme.create(t, "act.created", "http://127.0.0.1:9999/hook")
	if wh.Target != "http://127.0.0.1:9999/hook" {
		t.Fatal(wh.Target)
	}
}

func TestWebhookPermissions(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := newWebhookEnv(t, env, "acme")
		wh := acme.create(t, "act.created", "https://hooks.example.com/")
		path := fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id)
		body := map[string]any{"event": "act.created", "target": "https://x.example.com/"}

		viewer := acme.Token(acme.viewer, auth.ScopeWebhooksRead, auth.ScopeWebhooksWrite, auth.ScopeActsRead, auth.ScopeClientsRead)
		acme.Do("GET", path, viewer, nil).Status(t, 200)
		acme.Do("GET", "/api/1.0/webhooks", viewer, nil).Status(t, 200)
		acme.Do("POST", "/api/1.0/webhooks", viewer, body).Status(t, 403)
		acme.Do("PATCH", path, viewer, map[string]any{"active": false}).Status(t, 403)
		acme.Do("DELETE", path, viewer, nil).Status(t, 403)
		acme.Do("POST", path+"/rotate-secret", viewer, nil).Status(t, 403)

		readOnly := acme.Token(acme.member, auth.ScopeWebhooksRead)
		acme.Do("GET", path, readOnly, nil).Status(t, 200)
		acme.Do("POST", "/api/1.0/webhooks", readOnly, body).Status(t, 403)
		acme.Do("GET", path+"/deliveries", readOnly, nil).Status(t, 200)
		acme.Do("POST", path+"/deliveries/"+uuid.NewString()+"/redeliver", readOnly, nil).Status(t, 403)

		noScope := acme.Token(acme.member, auth.ScopeActsRead)
		acme.Do("GET", path, noScope, nil).Status(t, 403)
		acme.Do("GET", path, "", nil).Status(t, 401)

		admin := acme.AdminToken()
		acme.Do("POST", "/api/1.0/webhooks", admin, body).Status(t, 201)

		// Another tenant with the same ids sees only its own.
		beta := newWebhookEnv(t, env, "beta")
		bwh := beta.create(t, "act.fetch_data", "https://beta.example.com/")
		if bwh.Id != wh.Id {
			t.Fatalf("beta's first id %d, acme's %d: per-tenant ids expected", bwh.Id, wh.Id)
		}
		var got models.Webhook
		beta.Do("GET", path, beta.tok, nil).Status(t, 200).Decode(t, &got)
		if got.Target != "https://beta.example.com/" {
			t.Fatalf("beta sees %q", got.Target)
		}
		beta.Do("GET", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id+1), beta.tok, nil).Status(t, 404)
		beta.Do("DELETE", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id+1), beta.tok, nil).Status(t, 404)
		var list models.WebhookList
		beta.Do("GET", "/api/1.0/webhooks", beta.tok, nil).Status(t, 200).Decode(t, &list)
		if list.Meta.Total != 1 {
			t.Fatalf("beta lists %d", list.Meta.Total)
		}
		// acme's token does not work on beta's host.
		beta.Do("GET", path, acme.tok, nil).Status(t, 401)
	}, withSecret(false))
}

// emit writes an event through the outbox, as a business transaction does.
func emit(t *testing.T, te *apitest.TenantEnv, kind string, data any) uuid.UUID {
	t.Helper()
	id := uuid.New()
	err := te.DB.Tx(te.Ctx, func(tx *gorm.DB) error {
		_, err := (&outbox.Outbox{}).Emit(te.Ctx, tx, outbox.Event{ID: id, Kind: kind, Data: data})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestDeliveryLogAndRedeliver(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := newWebhookEnv(t, env, "acme")
		wh := acme.create(t, "act.created", "https://hooks.example.com/")
		other := acme.create(t, "act.created", "https://other.example.com/")
		path := fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id)
		ev1 := emit(t, acme.TenantEnv, "act.created", map[string]any{"act": map[string]any{"uuid": uuid.NewString()}})
		ev2 := emit(t, acme.TenantEnv, "act.created", map[string]any{"act": map[string]any{"uuid": uuid.NewString()}})

		var log models.DeliveryList
		acme.Do("GET", path+"/deliveries", acme.tok, nil).Status(t, 200).Decode(t, &log)
		if log.Meta.Total != 2 || len(log.Data) != 2 {
			t.Fatalf("log %+v", log)
		}
		events := map[uuid.UUID]bool{}
		for _, d := range log.Data {
			events[d.EventId] = true
			if d.Status != "pending" || d.Attempts != 0 || d.WebhookId != wh.Id || d.Event != "act.created" || d.NextAttemptAt == nil {
				t.Fatalf("delivery %+v", d)
			}
		}
		if !events[ev1] || !events[ev2] {
			t.Fatal("log misses an event")
		}
		acme.Do("GET", path+"/deliveries?limit=1&page=2", acme.tok, nil).Status(t, 200).Decode(t, &log)
		if log.Meta.Total != 2 || len(log.Data) != 1 || log.Meta.PerPage != 1 {
			t.Fatalf("page 2 %+v", log)
		}

		// A finished, failed delivery goes back to pending with the same event.
		d := log.Data[0]
		// (recorded as a worker records it: claimed, then finished, which
		// moves it to the history)
		if err := env.DB.Table("deliveries").Where("tenant_id = ? AND id = ?", acme.Tenant.ID, d.Id.String()).
			Updates(map[string]any{"status": "delivering", "lease_owner": "test"}).Error; err != nil {
			t.Fatal(err)
		}
		lastError := "target answered 500"
		failed := outbox.Update{Status: outbox.Failed, LastError: &lastError, Attempt: &outbox.Attempt{Number: 8, At: time.Now(), StatusCode: 500}}
		if held, err := outbox.Finish(t.Context(), env.DB, outbox.Claimed{TenantID: acme.Tenant.ID, ID: d.Id.String(), WebhookID: int64(d.WebhookId), EventID: d.EventId.String()}, "test", failed, time.Now(), nil); !held || err != nil {
			t.Fatalf("finish: held %v, %v", held, err)
		}
		var red models.Delivery
		acme.Do("POST", fmt.Sprintf("%s/deliveries/%s/redeliver", path, d.Id), acme.tok, nil).Status(t, 202).Decode(t, &red)
		if red.Id != d.Id || red.EventId != d.EventId || red.Status != "pending" || red.Attempts != 0 || red.NextAttemptAt == nil {
			t.Fatalf("redelivered %+v", red)
		}
		if red.LastStatusCode == nil || *red.LastStatusCode != 500 {
			t.Fatal("the log of the last attempt was lost")
		}
		// In flight: refused.
		env.DB.Table("deliveries").Where("id = ?", d.Id.String()).Update("status", "delivering")
		acme.Do("POST", fmt.Sprintf("%s/deliveries/%s/redeliver", path, d.Id), acme.tok, nil).Status(t, 400)
		env.DB.Table("deliveries").Where("id = ?", d.Id.String()).Update("status", "pending")
		// Unknown delivery, another registration's delivery, another tenant.
		acme.Do("POST", fmt.Sprintf("%s/deliveries/%s/redeliver", path, uuid.New()), acme.tok, nil).Status(t, 404)
		acme.Do("POST", fmt.Sprintf("/api/1.0/webhooks/%d/deliveries/%s/redeliver", other.Id, d.Id), acme.tok, nil).Status(t, 404)
		acme.Do("GET", "/api/1.0/webhooks/999/deliveries", acme.tok, nil).Status(t, 404)
		beta := newWebhookEnv(t, env, "beta")
		beta.create(t, "act.created", "https://beta.example.com/")
		beta.Do("POST", fmt.Sprintf("%s/deliveries/%s/redeliver", path, d.Id), beta.tok, nil).Status(t, 404)
		beta.Do("GET", path+"/deliveries", beta.tok, nil).Status(t, 200).Decode(t, &log)
		if log.Meta.Total != 0 {
			t.Fatal("beta sees acme's deliveries")
		}

		// Deactivating cancels pending deliveries; redelivery then refused.
		acme.Do("PATCH", path, acme.tok, map[string]any{"active": false}).Status(t, 200)
		var pending int64
		env.DB.Table("deliveries").Where("tenant_id = ? AND webhook_id = ? AND status = 'pending'", acme.Tenant.ID, wh.Id).Count(&pending)
		if pending != 0 {
			t.Fatalf("%d pending after deactivation", pending)
		}
		acme.Do("POST", fmt.Sprintf("%s/deliveries/%s/redeliver", path, d.Id), acme.tok, nil).Status(t, 400)
		// Reactivation clears disabled_reason.
		env.DB.Table("webhooks").Where("tenant_id = ? AND id = ?", acme.Tenant.ID, wh.Id).Update("disabled_reason", "target answered 410 Gone")
		var upd models.Webhook
		acme.Do("PATCH", path, acme.tok, map[string]any{"active": true}).Status(t, 200).Decode(t, &upd)
		if !upd.Active || upd.DisabledReason != nil {
			t.Fatalf("reactivated %+v", upd)
		}

		// Deleting removes its deliveries (pending ones are thereby cancelled)
		// and leaves the other registration's alone.
		acme.Do("DELETE", path, acme.tok, nil).Status(t, 204)
		var left, others int64
		env.DB.Table("delivery_log").Where("tenant_id = ? AND webhook_id = ?", acme.Tenant.ID, wh.Id).Count(&left)
		env.DB.Table("delivery_log").Where("tenant_id = ? AND webhook_id = ?", acme.Tenant.ID, other.Id).Count(&others)
		if left != 0 || others != 2 {
			t.Fatalf("after delete: %d of its deliveries, %d of the other's", left, others)
		}
	}, withSecret(false))
}

// Finding 2 of the security review: a member could rotate (and read) the
// secret of an admin's registration, point it at a URL of its choice and
// delete it. Admins manage every registration; a member only the ones it
// created (others are 404, as if absent); a viewer sees all, changes none.
func TestWebhookOwnership(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := newWebhookEnv(t, env, "acme")
		all := []string{auth.ScopeWebhooksRead, auth.ScopeWebhooksWrite, auth.ScopeActsRead, auth.ScopeClientsRead}
		adminID := acme.User(auth.RoleAdmin)
		admin := acme.Token(adminID, all...)
		var adminWH models.WebhookWithSecret
		acme.Do("POST", "/api/1.0/webhooks", admin, map[string]any{"event": "act.created", "target": "https://admin.example.com/"}).
			Status(t, 201).Decode(t, &adminWH)
		mine := acme.create(t, "act.created", "https://member.example.com/") // by acme.member
		ev := emit(t, acme.TenantEnv, "act.created", map[string]any{"act": map[string]any{"uuid": uuid.NewString()}})
		var dl models.DeliveryList
		acme.Do("GET", fmt.Sprintf("/api/1.0/webhooks/%d/deliveries", adminWH.Id), admin, nil).Status(t, 200).Decode(t, &dl)
		if len(dl.Data) != 1 || dl.Data[0].EventId != ev {
			t.Fatalf("admin's delivery log: %+v", dl)
		}
		adminPath := fmt.Sprintf("/api/1.0/webhooks/%d", adminWH.Id)
		redeliver := fmt.Sprintf("%s/deliveries/%s/redeliver", adminPath, dl.Data[0].Id)

		// Another member (and the registering member) cannot see, change,
		// rotate, delete, read the log of or redeliver the admin's.
		other := acme.Token(acme.User(auth.RoleMember), all...)
		for _, tok := range []string{acme.tok, other} {
			acme.Do("GET", adminPath, tok, nil).Status(t, 404)
			acme.Do("PATCH", adminPath, tok, map[string]any{"target": "https://evil.example.com/"}).Status(t, 404)
			acme.Do("POST", adminPath+"/rotate-secret", tok, nil).Status(t, 404)
			acme.Do("GET", adminPath+"/deliveries", tok, nil).Status(t, 404)
			acme.Do("POST", redeliver, tok, nil).Status(t, 404)
			acme.Do("DELETE", adminPath, tok, nil).Status(t, 404)
		}
		// The other member does not see the first member's either.
		minePath := fmt.Sprintf("/api/1.0/webhooks/%d", mine.Id)
		acme.Do("GET", minePath, other, nil).Status(t, 404)
		acme.Do("POST", minePath+"/rotate-secret", other, nil).Status(t, 404)
		var list models.WebhookList
		acme.Do("GET", "/api/1.0/webhooks", other, nil).Status(t, 200).Decode(t, &list)
		if list.Meta.Total != 0 || len(list.Data) != 0 {
			t.Fatalf("another member lists %+v", list)
		}
		acme.Do("GET", "/api/1.0/webhooks", acme.tok, nil).Status(t, 200).Decode(t, &list)
		if list.Meta.Total != 1 || list.Data[0].Id != mine.Id {
			t.Fatalf("the member lists %+v, want only its own", list)
		}
		// Nothing of the admin's changed.
		var got models.Webhook
		acme.Do("GET", adminPath, admin, nil).Status(t, 200).Decode(t, &got)
		if got.Target != "https://admin.example.com/" || !got.Active {
			t.Fatalf("admin's registration after the member's attempts: %+v", got)
		}
		var secretsAfter int64
		env.DB.Table("webhooks").Where("tenant_id = ? AND id = ? AND previous_secret_ciphertext IS NOT NULL", acme.Tenant.ID, adminWH.Id).Count(&secretsAfter)
		if secretsAfter != 0 {
			t.Fatal("a member rotated the admin's secret")
		}

		// A viewer sees every registration and changes none (403: it may
		// see them).
		viewer := acme.Token(acme.viewer, all...)
		acme.Do("GET", "/api/1.0/webhooks", viewer, nil).Status(t, 200).Decode(t, &list)
		if list.Meta.Total != 2 {
			t.Fatalf("viewer lists %d, want 2", list.Meta.Total)
		}
		acme.Do("GET", adminPath+"/deliveries", viewer, nil).Status(t, 200)
		acme.Do("POST", adminPath+"/rotate-secret", viewer, nil).Status(t, 403)
		acme.Do("POST", redeliver, viewer, nil).Status(t, 403)

		// The member manages its own; an admin manages everyone's.
		acme.Do("POST", minePath+"/rotate-secret", acme.tok, nil).Status(t, 200)
		acme.Do("PATCH", minePath, admin, map[string]any{"active": false}).Status(t, 200)
		acme.Do("POST", redeliver, admin, nil).Status(t, 202)
		acme.Do("DELETE", minePath, admin, nil).Status(t, 204)
		acme.Do("DELETE", adminPath, admin, nil).Status(t, 204)
	}, withSecret(false))
}

// TestWebhookChangeEvent: PATCH event moves a registration to another
// kind: events of the new kind are queued for it from then on, events of
// the previous kind no longer are, and a delivery queued before the change
// stays queued. A kind that cannot be subscribed to is a 400 naming event
// and changes nothing (neither the event nor a target sent beside it).
func TestWebhookChangeEvent(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := newWebhookEnv(t, env, "acme")
		wh := acme.create(t, "act.created", "https://hooks.example.com/")
		path := fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id)
		before := emit(t, acme.TenantEnv, "act.created", map[string]any{"act": map[string]any{"uuid": uuid.NewString()}})

		var upd models.Webhook
		acme.Do("PATCH", path, acme.tok, map[string]any{"event": "client.created"}).Status(t, 200).Decode(t, &upd)
		if upd.Event != "client.created" || upd.Target != wh.Target || !upd.Active {
			t.Fatalf("patched %+v", upd)
		}
		for _, body := range []any{
			map[string]any{"event": "act.exploded"},
			map[string]any{"event": "webhook.test"},
			map[string]any{"event": ""},
			map[string]any{"event": nil},
			map[string]any{"event": "act.exploded", "target": "https://moved.example.com/"},
		} {
			e := acme.Do("PATCH", path, acme.tok, body).Status(t, 400).Err(t)
			if len(e.Errors["event"]) == 0 {
				t.Errorf("%v: errors %v, want errors.event", body, e.Errors)
			}
		}
		var got models.Webhook
		acme.Do("GET", path, acme.tok, nil).Status(t, 200).Decode(t, &got)
		if got.Event != "client.created" || got.Target != wh.Target {
			t.Fatalf("after refused changes: %+v", got)
		}

		newKind := emit(t, acme.TenantEnv, "client.created", map[string]any{"client": map[string]any{"id": 1}})
		emit(t, acme.TenantEnv, "act.created", map[string]any{"act": map[string]any{"uuid": uuid.NewString()}})
		var log models.DeliveryList
		acme.Do("GET", path+"/deliveries", acme.tok, nil).Status(t, 200).Decode(t, &log)
		events := map[uuid.UUID]models.DeliveryEventKind{}
		for _, d := range log.Data {
			events[d.EventId] = d.Event
		}
		if len(log.Data) != 2 || events[before] != "act.created" || events[newKind] != "client.created" {
			t.Fatalf("deliveries %+v: want the one queued before the change and the new kind's", log.Data)
		}
	}, withSecret(false))
}
