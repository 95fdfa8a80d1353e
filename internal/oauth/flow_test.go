package oauth_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/oauth"
)

// TestAuthorizationCodeFlow: login redirect, consent, code, token (form
// and JSON, body and Basic credentials), /me with the access token.
func TestAuthorizationCodeFlow(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "admin")
		c := o.browser(t)

		// Not signed in: to the login page, and back after it.
		params := o.authParams("xyz-state-123")
		p := do(t, c, "GET", o.Server.URL+"/oauth/authorize?"+params.Encode(), nil)
		if p.Code != http.StatusFound || !strings.HasPrefix(p.Location, "/login?next=") {
			t.Fatalf("not signed in: %d %q", p.Code, p.Location)
		}
		lp := do(t, c, "GET", o.Server.URL+p.Location, nil)
		next, _ := url.Parse(p.Location)
		p = do(t, c, "POST", o.Server.URL+"/login", url.Values{
			"csrf_token": {csrfOf(t, lp.Body)}, "email": {o.email}, "password": {testPassword},
			"next": {next.Query().Get("next")},
		})
		if p.Code != http.StatusSeeOther || !strings.HasPrefix(p.Location, "/oauth/authorize?") {
			t.Fatalf("login: %d %q", p.Code, p.Location)
		}
		p = do(t, c, "GET", o.Server.URL+p.Location, nil)
		if p.Code != 200 || !strings.Contains(p.Body, "Test App") || !strings.Contains(p.Body, "clients:read") {
			t.Fatalf("consent page: %d %s", p.Code, p.Body)
		}
		form := hiddenFields(p.Body)
		form.Set("decision", "allow")
		p = do(t, c, "POST", o.Server.URL+"/oauth/authorize", form)
		if p.Code != http.StatusFound || !strings.HasPrefix(p.Location, testRedirect+"?") {
			t.Fatalf("allow: %d %q", p.Code, p.Location)
		}
		loc, _ := url.Parse(p.Location)
		if loc.Query().Get("state") != "xyz-state-123" || loc.Query().Get("code") == "" {
			t.Fatalf("redirect lacks code or state: %s", p.Location)
		}

		for _, st := range []reqStyle{{}, {json: true}, {basic: true}, {json: true, basic: true}} {
			code := o.code(t, o.authParams("state-"+randHex(4)))
			r := o.token(t, o.codeGrant(code), st)
			if r.Code != 200 {
				t.Fatalf("%+v: token = %d %v", st, r.Code, r.Body)
			}
			if r.str("token_type") != "bearer" || r.str("scope") != "clients:read acts:read" ||
				!strings.HasPrefix(r.str("access_token"), "ory_at_") || !strings.HasPrefix(r.str("refresh_token"), "ory_rt_") {
				t.Fatalf("%+v: token body %v", st, r.Body)
			}
			if ei, _ := r.Body["expires_in"].(float64); ei < 3500 || ei > 3600 {
				t.Fatalf("expires_in = %v", r.Body["expires_in"])
			}
			if cc := r.Resp.Header.Get("Cache-Control"); cc != "no-store" {
				t.Fatalf("Cache-Control = %q", cc)
			}
			status, me := o.me(t, r.str("access_token"))
			if status != 200 || me["email"] != o.email || me["role"] != "admin" || me["organization"] != "acme" {
				t.Fatalf("/me = %d %v", status, me)
			}
		}
	})
}

// TestConsentRemembered: a second authorization for the same (or fewer)
// scopes skips the page; more scopes ask again. Deny gives access_denied.
func TestConsentRemembered(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "member")
		c := o.browser(t)
		o.login(t, c)
		if p := o.consent(t, c, o.authParams("state-one-1"), "allow"); p.Code != http.StatusFound || !strings.Contains(p.Location, "code=") {
			t.Fatalf("first consent: %d %q", p.Code, p.Location)
		}
		params := o.authParams("state-two-2")
		params.Set("scope", "clients:read")
		p := do(t, c, "GET", o.Server.URL+"/oauth/authorize?"+params.Encode(), nil)
		if p.Code != http.StatusFound || !strings.Contains(p.Location, "code=") || !strings.Contains(p.Location, "state=state-two-2") {
			t.Fatalf("remembered consent should redirect with a code: %d %q", p.Code, p.Location)
		}
		params.Set("scope", "clients:read webhooks:write")
		params.Set("state", "state-three")
		p = do(t, c, "GET", o.Server.URL+"/oauth/authorize?"+params.Encode(), nil)
		if p.Code != 200 || !strings.Contains(p.Body, "webhooks:write") {
			t.Fatalf("new scope must ask again: %d", p.Code)
		}
		p = o.consent(t, c, params, "deny")
		loc, _ := url.Parse(p.Location)
		if p.Code != http.StatusFound || loc.Query().Get("error") != "access_denied" || loc.Query().Get("state") != "state-three" || loc.Query().Get("code") != "" {
			t.Fatalf("deny: %d %q", p.Code, p.Location)
		}
	})
}

// TestUsersScope: the consent page names users:read with what it grants,
// and only a token with it lists the users, admin or not.
func TestUsersScope(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "admin")
		c := o.browser(t)
		o.login(t, c)
		params := o.authParams("state-users-1")
		params.Set("scope", "users:read acts:read")
		p := do(t, c, "GET", o.Server.URL+"/oauth/authorize?"+params.Encode(), nil)
		if body := html.UnescapeString(p.Body); p.Code != 200 || !strings.Contains(body, oauth.ScopeDescription(auth.ScopeUsersRead)+` <code class="muted">users:read</code>`) {
			t.Fatalf("consent page: %d %s", p.Code, p.Body)
		}
		apps := html.UnescapeString(do(t, c, "GET", o.Server.URL+"/developer/my-apps", nil).Body)
		for _, sc := range []string{auth.ScopeUsersRead, auth.ScopeUsersWrite} {
			if !strings.Contains(apps, `value="`+sc+`"`) || !strings.Contains(apps, oauth.ScopeDescription(sc)) {
				t.Errorf("the app form does not offer %s", sc)
			}
		}
		for scope, want := range map[string]int{"users:read acts:read": 200, "acts:read": 403, "users:write clients:read": 403} {
			params := o.authParams("state-users-" + randHex(4))
			params.Set("scope", scope)
			r := o.token(t, o.codeGrant(o.code(t, params)), reqStyle{})
			if r.Code != 200 {
				t.Fatalf("%s: token %d %v", scope, r.Code, r.Body)
			}
			if got := o.Do("GET", "/api/1.0/users", r.str("access_token"), nil).Code; got != want {
				t.Errorf("GET /users with %q: %d, want %d", scope, got, want)
			}
		}
	})
}
