package oauth_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/oauth/store"
)

// TestLanding: sign-in without next goes to the console for admins and
// members, to the apps page for viewers; a given next wins.
func TestLanding(t *testing.T) {
	s := newServer(t, serverOpt{})
	for role, want := range map[string]string{auth.RoleAdmin: "/console/webhooks", auth.RoleMember: "/console/webhooks", auth.RoleViewer: "/account/apps"} {
		o := s.org(t, role+"-org", role)
		c := o.browser(t)
		p := do(t, c, "GET", o.Server.URL+"/login", nil)
		p = do(t, c, "POST", o.Server.URL+"/login", url.Values{"csrf_token": {csrfOf(t, p.Body)}, "email": {o.email}, "password": {testPassword}})
		if p.Code != http.StatusSeeOther || p.Location != want {
			t.Errorf("%s: %d %q, want %q", role, p.Code, p.Location, want)
		}
		// Signed in: /login goes to the same place.
		if p := do(t, c, "GET", o.Server.URL+"/login", nil); p.Code != http.StatusSeeOther || p.Location != want {
			t.Errorf("%s at /login signed in: %d %q", role, p.Code, p.Location)
		}
		if p := do(t, c, "GET", o.Server.URL+"/login?next=%2Faccount%2Fpassword", nil); p.Location != "/account/password" {
			t.Errorf("%s with next: %q", role, p.Location)
		}
	}
}

// TestExpiredSessionDeveloperPage: rotating a secret with an expired
// session rotates nothing; the sign-in page says the session expired and
// returns to the developer page.
func TestExpiredSessionDeveloperPage(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", auth.RoleAdmin)
		c := o.browser(t)
		o.login(t, c)
		p := do(t, c, "GET", o.Server.URL+"/developer/my-apps", nil)
		csrf := csrfOf(t, p.Body)
		if err := s.DB.Exec("UPDATE web_sessions SET expires_at = ?", time.Now().Add(-time.Minute).UTC()).Error; err != nil {
			t.Fatal(err)
		}
		p = do(t, c, "POST", o.Server.URL+"/developer/my-apps/"+o.clientID+"/rotate", url.Values{"csrf_token": {csrf}, "overlap": {"now"}})
		if p.Code != http.StatusSeeOther || p.Location != "/login?expired=1&next=%2Fdeveloper%2Fmy-apps" {
			t.Fatalf("rotate after expiry: %d %q", p.Code, p.Location)
		}
		var row store.Client
		if err := s.DB.Where("tenant_id = ? AND id = ?", o.Tenant.ID, o.clientID).Take(&row).Error; err != nil || row.SecretHash != store.HashSecret(o.secret) {
			t.Fatalf("the dropped rotation was applied: %v", err)
		}
		login := do(t, c, "GET", o.Server.URL+p.Location, nil)
		if !strings.Contains(login.Body, "Your session expired; sign in again.") {
			t.Fatalf("no expiry message: %s", login.Body)
		}
		p = do(t, c, "POST", o.Server.URL+"/login", url.Values{"csrf_token": {csrfOf(t, login.Body)}, "email": {o.email}, "password": {testPassword}, "next": {"/developer/my-apps"}})
		if p.Code != http.StatusSeeOther || p.Location != "/developer/my-apps" {
			t.Fatalf("sign-in: %d %q", p.Code, p.Location)
		}
		// Signing out is no expiry.
		p = do(t, c, "GET", o.Server.URL+"/developer/my-apps", nil)
		logout := csrfRE.FindStringSubmatch(strings.SplitN(p.Body, `action="/logout"`, 2)[1])
		if r := do(t, c, "POST", o.Server.URL+"/logout", url.Values{"csrf_token": {html.UnescapeString(logout[1])}}); r.Code != http.StatusSeeOther {
			t.Fatalf("sign out: %d", r.Code)
		}
		if p := do(t, c, "GET", o.Server.URL+"/developer/my-apps", nil); p.Location != "/login?next=%2Fdeveloper%2Fmy-apps" {
			t.Errorf("after signing out: %q", p.Location)
		}
	})
}
