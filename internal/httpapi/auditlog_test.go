package httpapi_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/users"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

type auditPage struct {
	Data    []models.AuditRecord `json:"data"`
	HasMore bool                 `json:"has_more"`
}

func listAudit(t *testing.T, te *apitest.TenantEnv, tok string, q url.Values) auditPage {
	t.Helper()
	var p auditPage
	te.Do("GET", "/api/1.0/audit-log?"+q.Encode(), tok, nil).Status(t, http.StatusOK).Decode(t, &p)
	return p
}

// Each security-relevant action through the API leaves exactly one audit
// record, with the acting user, the target, the outcome and the request's
// facts; a failed sign-in is recorded although nothing else is written.
// Members and tokens without audit:read get 403, another tenant sees none
// of it, paging and the JSON Lines export agree, and no record or event
// payload holds a password, token or secret the test saw.
func TestAuditLog(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		adminID := acme.User(auth.RoleAdmin)
		tok := acme.Token(adminID, auth.ScopeUsersRead, auth.ScopeUsersWrite, auth.ScopeWebhooksRead,
			auth.ScopeWebhooksWrite, auth.ScopeAuditRead, auth.ScopeActsRead, auth.ScopeClientsRead)
		secrets := []string{tok}
		do := func(method, path string, body any, status int, out any) *apitest.Response {
			t.Helper()
			r := acme.Do(method, path, tok, body).Status(t, status)
			if out != nil {
				r.Decode(t, out)
			}
			return r
		}
		type want struct {
			action, targetType, targetID, outcome, actorType string
			actor                                            *int64
		}
		var wants []want
		by := func(action, typ string, id int64) {
			wants = append(wants, want{action, typ, strconv.FormatInt(id, 10), audit.Success, "", &adminID})
		}

		var u models.UserCreated
		do("POST", "/api/1.0/users", map[string]any{"email": "ola@acme.example.com", "role": "member"}, 201, &u)
		secrets = append(secrets, *u.OneTimePassword)
		by(audit.UserCreated, audit.TargetUser, u.User.Id)
		uid := strconv.FormatInt(u.User.Id, 10)
		do("PATCH", "/api/1.0/users/"+uid, map[string]any{"role": "viewer"}, 200, nil)
		by(audit.UserRoleChanged, audit.TargetUser, u.User.Id)
		do("PATCH", "/api/1.0/users/"+uid, map[string]any{"name": "Ola N"}, 200, nil) // not security-relevant: no record
		var otp models.OneTimePassword
		do("POST", "/api/1.0/users/"+uid+"/one-time-password", nil, 200, &otp)
		secrets = append(secrets, otp.OneTimePassword)
		by(audit.OneTimePasswordIssued, audit.TargetUser, u.User.Id)

		// Sign-ins: the one-time password works once, then fails.
		store := users.NewStore(env.DB, users.WithHashParams(apitest.HashParams))
		if _, err := store.Authenticate(acme.Ctx, "ola@acme.example.com", otp.OneTimePassword); err != nil {
			t.Fatal(err)
		}
		wants = append(wants, want{audit.SignIn, audit.TargetUser, uid, audit.Success, audit.ActorUser, &u.User.Id})
		if _, err := store.Authenticate(acme.Ctx, "ola@acme.example.com", otp.OneTimePassword); err == nil {
			t.Fatal("a one-time password worked twice")
		}
		wants = append(wants, want{audit.SignIn, audit.TargetUser, uid, audit.Failure, audit.ActorAnonymous, nil})
		if _, err := store.Authenticate(acme.Ctx, "nobody@acme.example.com", "hunter2 hunter2"); err == nil {
			t.Fatal("an unknown email signed in")
		}
		secrets = append(secrets, "hunter2 hunter2", "nobody@acme.example.com")
		wants = append(wants, want{audit.SignIn, audit.TargetUser, "", audit.Failure, audit.ActorAnonymous, nil})
		do("DELETE", "/api/1.0/users/"+uid, nil, 204, nil)
		by(audit.UserDeactivated, audit.TargetUser, u.User.Id)

		var wh models.WebhookWithSecret
		do("POST", "/api/1.0/webhooks", map[string]any{"event": outbox.ClientCreated, "target": "https://hooks.example.com/a"}, 201, &wh)
		secrets = append(secrets, wh.Secret)
		by(audit.WebhookCreated, audit.TargetWebhook, wh.Id)
		wid := strconv.FormatInt(wh.Id, 10)
		do("PATCH", "/api/1.0/webhooks/"+wid, map[string]any{"target": "https://hooks.example.com/b"}, 200, nil)
		by(audit.WebhookUpdated, audit.TargetWebhook, wh.Id)
		do("PATCH", "/api/1.0/webhooks/"+wid, map[string]any{"active": false}, 200, nil)
		by(audit.WebhookDisabled, audit.TargetWebhook, wh.Id)
		var rot models.WebhookWithSecret
		do("POST", "/api/1.0/webhooks/"+wid+"/rotate-secret", nil, 200, &rot)
		secrets = append(secrets, rot.Secret)
		by(audit.WebhookSecretRotated, audit.TargetWebhook, wh.Id)
		do("DELETE", "/api/1.0/webhooks/"+wid, nil, 204, nil)
		by(audit.WebhookDeleted, audit.TargetWebhook, wh.Id)

		// The whole log, oldest first, by paging back two at a time.
		var got []models.AuditRecord
		p := listAudit(t, acme, tok, url.Values{"limit": {"2"}})
		for {
			got = append(got, p.Data...)
			if !p.HasMore {
				break
			}
			p = listAudit(t, acme, tok, url.Values{"limit": {"2"}, "starting_after": {strconv.FormatInt(p.Data[len(p.Data)-1].Id, 10)}})
		}
		if len(got) != len(wants) {
			t.Fatalf("%d records, want %d: %+v", len(got), len(wants), got)
		}
		for i, w := range wants {
			r := got[len(got)-1-i]
			actorOK := (w.actor == nil && r.Actor.UserId == nil) || (w.actor != nil && r.Actor.UserId != nil && *r.Actor.UserId == *w.actor)
			if r.Action != w.action || r.Target.Type != w.targetType || r.Target.Id != w.targetID || r.Outcome != w.outcome ||
				!actorOK || (w.actorType != "" && r.Actor.Type != w.actorType) {
				t.Errorf("record %d = %+v (actor %+v), want %+v", i, r, r.Actor, w)
			}
			if w.actor == &adminID && (r.RequestId == "" || r.SourceAddress == "" || r.Actor.Type == audit.ActorAnonymous) {
				t.Errorf("record %d lacks the request's facts: %+v", i, r)
			}
		}

		// Filters.
		if p := listAudit(t, acme, tok, url.Values{"action": {audit.SignIn}, "target_id": {uid}}); len(p.Data) != 2 {
			t.Errorf("sign-ins of %s: %+v", uid, p.Data)
		}
		if p := listAudit(t, acme, tok, url.Values{"actor_user_id": {strconv.FormatInt(u.User.Id, 10)}}); len(p.Data) != 1 || p.Data[0].Action != audit.SignIn {
			t.Errorf("actions by %s: %+v", uid, p.Data)
		}
		if p := listAudit(t, acme, tok, url.Values{"target_type": {audit.TargetWebhook}, "ending_before": {strconv.FormatInt(got[len(got)-1].Id, 10)}}); len(p.Data) != 5 || p.HasMore {
			t.Errorf("webhook records after the first: %+v", p)
		}

		// JSON Lines: the same records, oldest first.
		r := acme.Do("GET", "/api/1.0/audit-log/export", tok, nil).Status(t, http.StatusOK)
		if ct := r.Header.Get("Content-Type"); ct != "application/x-ndjson" {
			t.Errorf("export Content-Type %q", ct)
		}
		sc := bufio.NewScanner(strings.NewReader(string(r.Body)))
		n := 0
		for sc.Scan() {
			var rec models.AuditRecord
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatalf("line %d: %v", n, err)
			}
			if rec.Id != got[len(got)-1-n].Id {
				t.Fatalf("line %d is record %d, want %d", n, rec.Id, got[len(got)-1-n].Id)
			}
			n++
		}
		if n != len(got) {
			t.Fatalf("export has %d lines, want %d", n, len(got))
		}

		// Who may read it.
		member := acme.User(auth.RoleMember)
		acme.Do("GET", "/api/1.0/audit-log", acme.Token(member, auth.ScopeAuditRead), nil).Status(t, http.StatusForbidden)
		acme.Do("GET", "/api/1.0/audit-log", acme.Token(adminID, auth.ScopeUsersRead), nil).Status(t, http.StatusForbidden)
		acme.Do("GET", "/api/1.0/audit-log/export", acme.Token(adminID, auth.ScopeUsersRead), nil).Status(t, http.StatusForbidden)
		other := env.Tenant("globex")
		otok := other.Token(other.User(auth.RoleAdmin), auth.ScopeAuditRead)
		if p := listAudit(t, other, otok, nil); len(p.Data) != 0 {
			t.Errorf("another tenant lists %+v", p.Data)
		}
		if p := listAudit(t, other, otok, url.Values{"ending_before": {"0"}}); len(p.Data) != 0 {
			t.Errorf("another tenant pages into %+v", p.Data)
		}

		// Nothing secret in any audit record or event payload.
		var rows []string
		if err := env.DB.Raw(`SELECT actor_type || '|' || coalesce(actor_client_id, '') || '|' || source_addr || '|' || user_agent || '|' || action || '|' || target_type || '|' || target_id || '|' || outcome || '|' || request_id FROM audit_log`).Scan(&rows).Error; err != nil {
			t.Fatal(err)
		}
		var payloads []string
		if err := env.DB.Table("events").Pluck("payload", &payloads).Error; err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			for _, row := range append(rows, payloads...) {
				if strings.Contains(row, s) {
					t.Errorf("a stored row holds the secret %q: %s", s, row)
				}
			}
		}
		if len(rows) != len(wants) {
			t.Errorf("%d audit rows in the database, want %d", len(rows), len(wants))
		}
	})
}
