package oauth_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/auth"
)

// Credentials are read from the POST body only, never from the URL (which
// lands in access logs, proxies and the browser's history): a sign-in, a
// password change or an app registration whose fields sit in the query
// string does nothing, as if they were missing; and so does a consent
// whose decision sits there.
func TestCredentialsFromTheBodyOnly(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", auth.RoleAdmin)
		base := o.Server.URL
		b := o.browser(t)
		form := do(t, b, "GET", base+"/login", nil)
		q := url.Values{"email": {o.email}, "password": {testPassword}}
		p := do(t, b, "POST", base+"/login?"+q.Encode(), url.Values{"csrf_token": {csrfOf(t, form.Body)}, "next": {"/account/apps"}})
		if p.Code == http.StatusSeeOther || p.Code == http.StatusFound {
			t.Fatalf("a sign-in with the credentials in the query: %d %q", p.Code, p.Location)
		}
		if p := do(t, b, "GET", base+"/account/apps", nil); p.Code != http.StatusFound || !strings.HasPrefix(p.Location, "/login") {
			t.Fatalf("signed in by the query's credentials: %d %q", p.Code, p.Location)
		}

		o.login(t, b)
		form = do(t, b, "GET", base+"/account/password", nil)
		const next = "blue kettle on a quiet harbor"
		q = url.Values{"current_password": {testPassword}, "password": {next}, "password_confirm": {next}}
		p = do(t, b, "POST", base+"/account/password?"+q.Encode(), url.Values{"csrf_token": {csrfOf(t, form.Body)}})
		if p.Code == http.StatusSeeOther {
			t.Errorf("a password change from the query: %d %q", p.Code, p.Location)
		}
		if _, err := s.svcUsers().Authenticate(o.Ctx, o.email, testPassword); err != nil {
			t.Fatalf("the password changed from the query: %v", err)
		}

		form = do(t, b, "GET", base+"/developer/my-apps", nil)
		q = url.Values{"name": {"From the URL"}, "redirect_uris": {"https://app.example.com/cb"}, "scopes": {"acts:read"}}
		p = do(t, b, "POST", base+"/developer/my-apps?"+q.Encode(), url.Values{"csrf_token": {csrfOf(t, form.Body)}})
		if p.Code == http.StatusSeeOther {
			t.Errorf("an app registered from the query: %d %q", p.Code, p.Location)
		}

		// The consent's decision in the URL decides nothing.
		consent := do(t, b, "GET", base+"/oauth/authorize?"+o.authParams("state-query").Encode(), nil)
		if consent.Code != http.StatusOK {
			t.Fatalf("consent page: %d %q", consent.Code, consent.Location)
		}
		p = do(t, b, "POST", base+"/oauth/authorize?"+url.Values{"decision": {"allow"}}.Encode(), hiddenFields(consent.Body))
		if p.Code != http.StatusBadRequest || strings.Contains(p.Location, "code=") {
			t.Errorf("a consent decided by the query: %d %q", p.Code, p.Location)
		}
	})
}
