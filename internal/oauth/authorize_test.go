package oauth_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/oauth"
)

// TestStateRules: state is required, at least 8 characters, returned
// unchanged; a consent form whose state was swapped is refused.
func TestStateRules(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "admin")
		c := o.browser(t)
		o.login(t, c)
		for _, st := range []string{"", "short7c"} {
			params := o.authParams(st)
			if st == "" {
				params.Del("state")
			}
			p := do(t, c, "GET", o.Server.URL+"/oauth/authorize?"+params.Encode(), nil)
			loc, _ := url.Parse(p.Location)
			if p.Code != http.StatusFound || loc.Query().Get("error") != "invalid_request" || loc.Query().Get("code") != "" ||
				!strings.HasPrefix(p.Location, testRedirect) {
				t.Fatalf("state %q: %d %q", st, p.Code, p.Location)
			}
		}
		// Exactly 8 characters is enough, and comes back unchanged
		// (including characters that need escaping).
		for _, st := range []string{"12345678", "a b/c?d=e&f"} {
			code := o.code(t, o.authParams(st)) // code() checks the state
			if code == "" {
				t.Fatal("no code")
			}
		}
		// Wrong state: the consent form's token is bound to the state it
		// was shown for.
		params := o.authParams("original-state")
		p := do(t, c, "GET", o.Server.URL+"/oauth/authorize?"+params.Encode(), nil)
		form := hiddenFields(p.Body)
		form.Set("decision", "allow")
		form.Set("state", "attacker-state")
		p = do(t, c, "POST", o.Server.URL+"/oauth/authorize", form)
		if p.Code != http.StatusForbidden || p.Location != "" {
			t.Fatalf("swapped state: %d %q", p.Code, p.Location)
		}
		// Same for a swapped redirect URI or scope, and a missing token.
		for k, v := range map[string]string{"redirect_uri": "https://evil.example.com/cb", "scope": "webhooks:write", "csrf_token": ""} {
			f := hiddenFields(do(t, c, "GET", o.Server.URL+"/oauth/authorize?"+params.Encode(), nil).Body)
			f.Set("decision", "allow")
			f.Set(k, v)
			if p := do(t, c, "POST", o.Server.URL+"/oauth/authorize", f); p.Code != http.StatusForbidden {
				t.Fatalf("swapped %s: %d %q", k, p.Code, p.Location)
			}
		}
	})
}

// TestAuthorizeBadClientOrRedirect: an unknown app, another tenant's app or
// an unregistered redirect URI is an error page, never a redirect.
func TestAuthorizeBadClientOrRedirect(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		a := s.org(t, "acme", "admin")
		b := s.org(t, "globex", "admin")
		c := a.browser(t)
		a.login(t, c)
		cases := map[string]url.Values{}
		p := a.authParams("state-12345")
		p.Set("client_id", "app_doesnotexist")
		cases["unknown client"] = p
		p = a.authParams("state-12345")
		p.Set("client_id", b.clientID)
		cases["other tenant's client"] = p
		p = a.authParams("state-12345")
		p.Set("redirect_uri", "https://evil.example.com/callback")
		cases["unregistered redirect"] = p
		p = a.authParams("state-12345")
		p.Del("redirect_uri")
		p.Del("client_id")
		cases["no client"] = p
		for name, params := range cases {
			for _, signedIn := range []bool{true, false} {
				cl := c
				if !signedIn {
					cl = a.browser(t)
				}
				res := do(t, cl, "GET", a.Server.URL+"/oauth/authorize?"+params.Encode(), nil)
				if res.Code != http.StatusBadRequest || res.Location != "" || !strings.Contains(res.Body, "Cannot authorize") {
					t.Fatalf("%s (signed in %v): %d %q", name, signedIn, res.Code, res.Location)
				}
			}
		}
		// response_type other than code: the app is known, so the error
		// goes back to it.
		params := a.authParams("state-12345")
		params.Set("response_type", "token")
		res := do(t, c, "GET", a.Server.URL+"/oauth/authorize?"+params.Encode(), nil)
		loc, _ := url.Parse(res.Location)
		if res.Code != http.StatusFound || loc.Query().Get("error") == "" || loc.Query().Get("state") != "state-12345" {
			t.Fatalf("response_type=token: %d %q", res.Code, res.Location)
		}
		// A scope the app was not registered for.
		small := s.org(t, "small", "admin", "clients:read")
		c2 := small.browser(t)
		small.login(t, c2)
		params = small.authParams("state-12345")
		params.Set("scope", "clients:read templates:write")
		res = do(t, c2, "GET", small.Server.URL+"/oauth/authorize?"+params.Encode(), nil)
		loc, _ = url.Parse(res.Location)
		if res.Code != http.StatusFound || loc.Query().Get("error") != "invalid_scope" {
			t.Fatalf("unregistered scope: %d %q", res.Code, res.Location)
		}
	})
}

// TestRedirectURIExactMatch: a redirect URI must equal a registered one
// character for character, loopback included. fosite's RFC 8252 loopback
// rule used to accept another port, userinfo, another scheme case, a
// leading-zero port and percent-encoded path characters, and their codes
// were exchanged.
func TestRedirectURIExactMatch(t *testing.T) {
	const registered = "http://127.0.0.1:8765/callback"
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "admin")
		id, secret, err := oauth.CreateApp(context.Background(), s.DB, o.Tenant.ID, "Native", []string{registered, "https://app.example.com/cb"}, auth.AllScopes)
		if err != nil {
			t.Fatal(err)
		}
		app := &org{TenantEnv: o.TenantEnv, s: s, userID: o.userID, email: o.email, clientID: id, secret: secret, redirect: registered}
		c := app.browser(t)
		app.login(t, c)
		for _, uri := range []string{
			"http://127.0.0.1:8766/callback",
			"http://127.0.0.1/callback",
			"http://evil@127.0.0.1:8765/callback",
			"HTTP://127.0.0.1:8765/callback",
			"http://127.0.0.1:08765/callback",
			"http://127.0.0.1:8765/%63allback",
			"http://127.0.0.1:8765/callback/",
			"http://127.0.0.1:8765/Callback",
			"http://127.0.0.1:8765/callback?x=1",
			"http://[::1]:8765/callback",
			"https://APP.example.com/cb",
		} {
			for _, scope := range []string{"clients:read", "no-such-scope"} {
				params := app.authParams("state-exact-1")
				params.Set("redirect_uri", uri)
				params.Set("scope", scope)
				// (The consent POST needs a CSRF token bound to these
				// parameters, which only this refused page could give.)
				p := do(t, c, "GET", app.Server.URL+"/oauth/authorize?"+params.Encode(), nil)
				if p.Code != http.StatusBadRequest || p.Location != "" || !strings.Contains(p.Body, "not registered") {
					t.Errorf("%s (scope %s): %d %q", uri, scope, p.Code, p.Location)
				}
			}
		}
		// The registered string itself works end to end.
		if r := app.token(t, app.codeGrant(app.code(t, app.authParams("state-exact-2"))), reqStyle{}); r.Code != http.StatusOK {
			t.Fatalf("exact loopback URI: %d %v", r.Code, r.Body)
		}
	})
}
