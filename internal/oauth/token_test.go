package oauth_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/config"
)

var allStyles = []reqStyle{{}, {json: true}, {basic: true}, {json: true, basic: true}}

func TestTokenEndpointErrors(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		a := s.org(t, "acme", "admin")
		b := s.org(t, "globex", "admin")
		for _, st := range allStyles {
			// grant_type missing or not ours: unsupported_grant_type.
			g := a.codeGrant("whatever")
			g.Del("grant_type")
			expectOAuthError(t, a.token(t, g, st), 400, "unsupported_grant_type")
			for _, gt := range []string{"password", "client_credentials", "implicit", "authorization_code refresh_token"} {
				g.Set("grant_type", gt)
				expectOAuthError(t, a.token(t, g, st), 400, "unsupported_grant_type")
			}

			code := a.code(t, a.authParams("state-"+randHex(4)))
			// A missing required field of the grant (the contract's unsupported_grant_type).
			for _, k := range []string{"code", "redirect_uri"} {
				g = a.codeGrant(code)
				g.Del(k)
				expectOAuthError(t, a.token(t, g, st), 400, "unsupported_grant_type")
			}
			g = a.refreshGrant("")
			expectOAuthError(t, a.token(t, g, st), 400, "unsupported_grant_type")
			// Missing client credentials.
			if !st.basic {
				g = a.codeGrant(code)
				g.Del("client_id")
				g.Del("client_secret")
				expectOAuthError(t, a.token(t, g, st), 401, "invalid_client")
				g = a.codeGrant(code)
				g.Del("client_secret")
				expectOAuthError(t, a.token(t, g, st), 401, "invalid_client")
			}
			// Wrong secret, unknown client, and tenant B's app at tenant A.
			g = a.codeGrant(code)
			g.Set("client_secret", "wrong-secret")
			expectOAuthError(t, a.token(t, g, st), 401, "invalid_client")
			g = a.codeGrant(code)
			g.Set("client_id", "app_unknown")
			expectOAuthError(t, a.token(t, g, st), 401, "invalid_client")
			g = a.codeGrant(code)
			g.Set("client_id", b.clientID)
			g.Set("client_secret", b.secret)
			expectOAuthError(t, a.token(t, g, st), 401, "invalid_client")
			// The code was not consumed by the failed attempts.
			g = a.codeGrant(code)
			g.Set("redirect_uri", "https://app.example.com/other")
			expectOAuthError(t, a.token(t, g, st), 400, "invalid_grant")
			// A code that does not exist.
			expectOAuthError(t, a.token(t, a.codeGrant("ory_ac_nope.nope"), st), 400, "invalid_grant")
			// Tenant A's code presented by tenant A's client at tenant B's
			// host: the client is unknown there.
			expectOAuthError(t, b.token(t, a.codeGrant(code), st), 401, "invalid_client")
			// Finally the right request works.
			if r := a.token(t, a.codeGrant(code), st); r.Code != 200 {
				t.Fatalf("%+v: valid exchange = %d %v", st, r.Code, r.Body)
			}
			// Refresh: unknown token, wrong client.
			expectOAuthError(t, a.token(t, a.refreshGrant("ory_rt_nope.nope"), st), 400, "invalid_grant")
		}
		if r := a.token(t, url.Values{}, reqStyle{}); r.Code != 400 {
			t.Fatalf("empty body = %d %v", r.Code, r.Body)
		}
	})
}

func TestTokenEndpointMalformedJSON(t *testing.T) {
	s := newServer(t, serverOpt{})
	o := s.org(t, "acme", "admin")
	for _, body := range []string{`{`, `[]`, `{"grant_type": {"x": 1}}`} {
		req, _ := http.NewRequest("POST", o.Server.URL+"/api/oauth/token", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := o.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Fatalf("%s: status %d", body, resp.StatusCode)
		}
	}
}

// TestCodeReplayRevokesTokens: the second use of a code fails and revokes
// everything the first use issued.
func TestCodeReplayRevokesTokens(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "member")
		code := o.code(t, o.authParams("state-replay"))
		r := o.token(t, o.codeGrant(code), reqStyle{})
		if r.Code != 200 {
			t.Fatalf("exchange: %d %v", r.Code, r.Body)
		}
		access, refresh := r.str("access_token"), r.str("refresh_token")
		if st, _ := o.me(t, access); st != 200 {
			t.Fatalf("/me before replay = %d", st)
		}
		expectOAuthError(t, o.token(t, o.codeGrant(code), reqStyle{json: true}), 400, "invalid_grant")
		if st, _ := o.me(t, access); st != 401 {
			t.Fatalf("access token after code replay: /me = %d, want 401", st)
		}
		expectOAuthError(t, o.token(t, o.refreshGrant(refresh), reqStyle{}), 400, "invalid_grant")
	})
}

// TestRefreshRotation: each refresh rotates; reusing a rotated token
// revokes the whole family.
func TestRefreshRotation(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "viewer")
		access1, refresh1 := o.tokens(t)
		r := o.token(t, o.refreshGrant(refresh1), reqStyle{json: true})
		if r.Code != 200 {
			t.Fatalf("refresh: %d %v", r.Code, r.Body)
		}
		access2, refresh2 := r.str("access_token"), r.str("refresh_token")
		if refresh2 == refresh1 || access2 == access1 || refresh2 == "" {
			t.Fatal("refresh did not rotate the tokens")
		}
		if r.str("scope") != "clients:read acts:read" {
			t.Fatalf("scope after refresh = %q", r.str("scope"))
		}
		if st, _ := o.me(t, access1); st != 401 {
			t.Fatalf("the access token of a rotated refresh token still works: %d", st)
		}
		if st, _ := o.me(t, access2); st != 200 {
			t.Fatalf("new access token: /me = %d", st)
		}
		r = o.token(t, o.refreshGrant(refresh2), reqStyle{basic: true})
		if r.Code != 200 {
			t.Fatalf("second refresh: %d %v", r.Code, r.Body)
		}
		access3, refresh3 := r.str("access_token"), r.str("refresh_token")

		// Reuse of refresh1 (rotated twice ago): invalid_grant, and the
		// live tokens of the family die with it.
		expectOAuthError(t, o.token(t, o.refreshGrant(refresh1), reqStyle{}), 400, "invalid_grant")
		if st, _ := o.me(t, access3); st != 401 {
			t.Fatalf("family access token after reuse: /me = %d, want 401", st)
		}
		expectOAuthError(t, o.token(t, o.refreshGrant(refresh3), reqStyle{}), 400, "invalid_grant")

		// Another tenant's refresh token is unknown here; with its own
		// client it is an invalid_client here.
		other := s.org(t, "other", "admin")
		_, rt := other.tokens(t)
		expectOAuthError(t, o.token(t, o.refreshGrant(rt), reqStyle{}), 400, "invalid_grant")
		expectOAuthError(t, o.token(t, other.refreshGrant(rt), reqStyle{}), 401, "invalid_client")
		// Its own tenant still takes it.
		if r := other.token(t, other.refreshGrant(rt), reqStyle{}); r.Code != 200 {
			t.Fatalf("refresh at its own tenant: %d %v", r.Code, r.Body)
		}
	})
}

func TestPKCE(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "admin")
		verifier := "verifier-" + strings.Repeat("abcdefgh", 6)
		params := o.authParams("state-pkce")
		params.Set("code_challenge", s256(verifier))
		params.Set("code_challenge_method", "S256")

		// Missing verifier.
		code := o.code(t, params)
		expectOAuthError(t, o.token(t, o.codeGrant(code), reqStyle{}), 400, "invalid_grant")
		// Wrong verifier.
		code = o.code(t, params)
		g := o.codeGrant(code)
		g.Set("code_verifier", "wrong-"+strings.Repeat("x", 50))
		expectOAuthError(t, o.token(t, g, reqStyle{}), 400, "invalid_grant")
		// Right verifier.
		code = o.code(t, params)
		g = o.codeGrant(code)
		g.Set("code_verifier", verifier)
		if r := o.token(t, g, reqStyle{json: true}); r.Code != 200 {
			t.Fatalf("PKCE exchange: %d %v", r.Code, r.Body)
		}

		// plain (and a challenge without method, which means plain) is refused.
		c := o.browser(t)
		o.login(t, c)
		for _, method := range []string{"plain", ""} {
			p := params
			p = cloneValues(p)
			p.Set("code_challenge", verifier)
			if method == "" {
				p.Del("code_challenge_method")
			} else {
				p.Set("code_challenge_method", method)
			}
			res := do(t, c, "GET", o.Server.URL+"/oauth/authorize?"+p.Encode(), nil)
			loc, _ := url.Parse(res.Location)
			if res.Code != http.StatusFound || loc.Query().Get("error") != "invalid_request" || loc.Query().Get("code") != "" {
				t.Fatalf("method %q: %d %q", method, res.Code, res.Location)
			}
		}
	})
}

// TestExpiredCode: a code past its lifetime is invalid_grant.
func TestExpiredCode(t *testing.T) {
	s := newServer(t, serverOpt{opts: []apitest.Option{apitest.WithConfig(func(c *config.Config) { c.AuthCodeTTL = -time.Minute })}})
	o := s.org(t, "acme", "admin")
	code := o.code(t, o.authParams("state-expired"))
	expectOAuthError(t, o.token(t, o.codeGrant(code), reqStyle{}), 400, "invalid_grant")
}
