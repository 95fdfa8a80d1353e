package oauth_test

import (
	"errors"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/oauth"
)

// TestAuditedAppActions: every app, consent and revocation action writes
// exactly one audit record with its actor, target and outcome: apps
// registered by the CLI's function (the service) and on the developer
// page (the signed-in admin), secrets rotated and overlaps ended, apps
// deleted, consents granted and revoked by the user, and a token revoked
// at the revocation endpoint by its app for its user, whose target is the
// token family's request id; a reused refresh token and a reused code
// each record the service's revocation of their grant, with the same
// actor and target. Repeats that change nothing record nothing,
// an action rolled back leaves no record, and no record holds a client
// secret, a token or a token signature.
func TestAuditedAppActions(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", auth.RoleAdmin) // its app registered by oauth.CreateApp, as by `finsvc app create`
		secrets := []string{o.secret}
		type want struct {
			action, actorType string
			actorUser         *int64
			actorApp          string
			targetType        string
			targetID          string
		}
		wants := []want{{audit.AppCreated, audit.ActorSystem, nil, "", audit.TargetApp, o.clientID}}
		uid := o.userID
		byUser := func(action, typ, id string) { wants = append(wants, want{action, audit.ActorUser, &uid, "", typ, id}) }

		// Consent (granted once: the second authorization is remembered),
		// then the app revokes its refresh token: the whole family goes.
		access, refresh := o.tokens(t)
		o.code(t, o.authParams("state-again"))
		byUser(audit.ConsentGranted, audit.TargetApp, o.clientID)
		secrets = append(secrets, access, refresh)
		var family []string
		if err := s.DB.Table("oauth_refresh_tokens").Where("tenant_id = ? AND client_id = ?", o.Tenant.ID, o.clientID).
			Distinct().Pluck("request_id", &family).Error; err != nil || len(family) != 1 {
			t.Fatalf("token families %v, %v", family, err)
		}
		var sigs []string
		for _, tb := range []string{"oauth_refresh_tokens", "oauth_access_tokens", "oauth_codes"} {
			var s2 []string
			if err := s.DB.Table(tb).Where("tenant_id = ?", o.Tenant.ID).Pluck("signature", &s2).Error; err != nil {
				t.Fatal(err)
			}
			sigs = append(sigs, s2...)
		}
		if len(sigs) < 3 {
			t.Fatalf("signatures %v", sigs)
		}
		secrets = append(secrets, sigs...)
		revoke := url.Values{"client_id": {o.clientID}, "client_secret": {o.secret}, "token": {refresh}}
		if r := o.post(t, "/api/oauth/revoke", revoke, reqStyle{}); r.Code != http.StatusOK {
			t.Fatalf("revoke: %d %v", r.Code, r.Body)
		}
		wants = append(wants, want{audit.TokenRevoked, audit.ActorApp, &uid, o.clientID, audit.TargetToken, family[0]})
		if st, _ := o.me(t, access); st != http.StatusUnauthorized {
			t.Fatalf("access token after revoking its family: %d", st)
		}
		// Again, and the access token already gone: nothing more revoked.
		for _, tok := range []string{refresh, access} {
			revoke.Set("token", tok)
			if r := o.post(t, "/api/oauth/revoke", revoke, reqStyle{}); r.Code != http.StatusOK {
				t.Fatalf("revoke again: %d %v", r.Code, r.Body)
			}
		}

		// A rotated refresh token presented again, and a used code
		// presented again: the service revokes the grant each time, and
		// records it with the app as actor and the grant as target.
		newFamily := func(known []string) string {
			t.Helper()
			var ids []string
			if err := s.DB.Table("oauth_refresh_tokens").Where("tenant_id = ? AND request_id NOT IN ?", o.Tenant.ID, known).
				Distinct().Pluck("request_id", &ids).Error; err != nil || len(ids) != 1 {
				t.Fatalf("new token families %v, %v", ids, err)
			}
			return ids[0]
		}
		access2, refresh2 := o.tokens(t)
		family = append(family, newFamily(family))
		rotated := o.token(t, o.refreshGrant(refresh2), reqStyle{})
		if rotated.Code != http.StatusOK {
			t.Fatalf("refresh: %d %v", rotated.Code, rotated.Body)
		}
		secrets = append(secrets, access2, refresh2, rotated.str("access_token"), rotated.str("refresh_token"))
		expectOAuthError(t, o.token(t, o.refreshGrant(refresh2), reqStyle{}), http.StatusBadRequest, "invalid_grant")
		wants = append(wants, want{audit.TokenReuseRevoked, audit.ActorApp, &uid, o.clientID, audit.TargetToken, family[1]})
		if st, _ := o.me(t, rotated.str("access_token")); st != http.StatusUnauthorized {
			t.Fatalf("the rotated token's successor after the reuse: %d", st)
		}
		code := o.code(t, o.authParams("state-reuse"))
		secrets = append(secrets, code)
		first := o.token(t, o.codeGrant(code), reqStyle{})
		if first.Code != http.StatusOK {
			t.Fatalf("code grant: %d %v", first.Code, first.Body)
		}
		secrets = append(secrets, first.str("access_token"), first.str("refresh_token"))
		family = append(family, newFamily(family))
		expectOAuthError(t, o.token(t, o.codeGrant(code), reqStyle{}), http.StatusBadRequest, "invalid_grant")
		wants = append(wants, want{audit.TokenReuseRevoked, audit.ActorApp, &uid, o.clientID, audit.TargetToken, family[2]})
		if st, _ := o.me(t, first.str("access_token")); st != http.StatusUnauthorized {
			t.Fatalf("a reused code's access token: %d", st)
		}

		// The developer page: register, rotate with an overlap, end it
		// (twice: the second ends nothing), delete.
		c := o.browser(t)
		o.login(t, c)
		apps := o.Server.URL + "/developer/my-apps"
		csrf := csrfOf(t, do(t, c, "GET", apps, nil).Body)
		p := do(t, c, "POST", apps, url.Values{"csrf_token": {csrf}, "name": {"Ledger Sync"},
			"redirect_uris": {"https://ledger.example.com/cb"}, "scopes": {"clients:read"}})
		if p.Code != http.StatusSeeOther {
			t.Fatalf("create: %d %s", p.Code, p.Body)
		}
		p = do(t, c, "GET", apps, nil)
		id := html.UnescapeString(clientIDRE.FindStringSubmatch(p.Body)[1])
		secrets = append(secrets, html.UnescapeString(secretRE.FindStringSubmatch(p.Body)[1]))
		byUser(audit.AppCreated, audit.TargetApp, id)
		if p = do(t, c, "POST", apps+"/"+id+"/rotate", url.Values{"csrf_token": {csrf}, "overlap": {"24h"}}); p.Code != http.StatusSeeOther {
			t.Fatalf("rotate: %d %s", p.Code, p.Body)
		}
		p = do(t, c, "GET", apps, nil)
		secrets = append(secrets, html.UnescapeString(secretRE.FindStringSubmatch(p.Body)[1]))
		byUser(audit.AppSecretRotated, audit.TargetApp, id)
		for range 2 {
			if p = do(t, c, "POST", apps+"/"+id+"/end-overlap", url.Values{"csrf_token": {csrf}}); p.Code != http.StatusSeeOther {
				t.Fatalf("end overlap: %d %s", p.Code, p.Body)
			}
		}
		byUser(audit.AppSecretOverlapEnded, audit.TargetApp, id)

		// Rolled back, a registration, a rotation and a deletion leave no
		// record (and the app).
		rollback := errors.New("roll back")
		if err := s.DB.InTx(o.Ctx, func(ctx db.TxContext, _ *gorm.DB) error {
			if _, _, err := oauth.CreateAppCtx(ctx, s.DB, &uid, "Rolled Back", []string{testRedirect}, nil); err != nil {
				return err
			}
			if _, _, err := oauth.RotateSecret(ctx, s.DB, audit.UserActor(uid), id, 0); err != nil {
				return err
			}
			if err := oauth.DeleteApp(ctx, s.DB, audit.UserActor(uid), id); err != nil {
				return err
			}
			return rollback
		}); !errors.Is(err, rollback) {
			t.Fatal(err)
		}
		p = do(t, c, "POST", apps+"/"+id+"/delete", url.Values{"csrf_token": {csrf}})
		if p = do(t, c, "POST", apps+"/"+id+"/delete", url.Values{"csrf_token": {csrfOf(t, p.Body)}}); p.Code != http.StatusSeeOther {
			t.Fatalf("delete: %d %s", p.Code, p.Body)
		}
		byUser(audit.AppDeleted, audit.TargetApp, id)

		// The user revokes the app's access on /account/apps; a second
		// revocation finds nothing to revoke.
		acsrf := csrfOf(t, do(t, c, "GET", o.Server.URL+"/account/apps", nil).Body)
		for range 2 {
			p = do(t, c, "POST", o.Server.URL+"/account/apps/"+o.clientID+"/revoke", url.Values{"csrf_token": {acsrf}})
			if p.Code != http.StatusOK {
				t.Fatalf("revoke asks: %d %s", p.Code, p.Body)
			}
			if p = do(t, c, "POST", o.Server.URL+"/account/apps/"+o.clientID+"/revoke", url.Values{"csrf_token": {csrfOf(t, p.Body)}}); p.Code != http.StatusSeeOther {
				t.Fatalf("revoke: %d %s", p.Code, p.Body)
			}
		}
		byUser(audit.ConsentRevoked, audit.TargetApp, o.clientID)

		// The records of these actions, oldest first (sign-ins and the
		// user's creation aside).
		rows, _, err := audit.List(o.Ctx, s.DB.DB, audit.Filter{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var got []audit.Row
		for i := len(rows) - 1; i >= 0; i-- {
			if a := rows[i].Action; a != audit.SignIn && a != audit.UserCreated {
				got = append(got, rows[i])
			}
		}
		if len(got) != len(wants) {
			t.Fatalf("%d records, want %d: %+v", len(got), len(wants), got)
		}
		for i, w := range wants {
			r := got[i]
			app := ""
			if r.ActorClientID != nil {
				app = *r.ActorClientID
			}
			userOK := (w.actorUser == nil) == (r.ActorUserID == nil) && (w.actorUser == nil || *w.actorUser == *r.ActorUserID)
			if r.Action != w.action || r.ActorType != w.actorType || !userOK || app != w.actorApp ||
				r.TargetType != w.targetType || r.TargetID != w.targetID || r.Outcome != audit.Success {
				t.Errorf("record %d = %+v, want %+v", i, r, w)
			}
			if w.actorType != audit.ActorSystem && (r.RequestID == "" || r.SourceAddr == "") {
				t.Errorf("record %d lacks the request's facts: %+v", i, r)
			}
		}
		for _, r := range rows {
			line := strings.Join([]string{r.ActorType, strconv.Quote(deref(r.ActorClientID)), r.SourceAddr, r.UserAgent,
				r.Action, r.TargetType, r.TargetID, r.Outcome, r.RequestID}, "|")
			for _, sec := range secrets {
				if sec == "" || strings.Contains(line, sec) {
					t.Errorf("record %d holds the secret %q: %s", r.ID, sec, line)
				}
			}
		}
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
