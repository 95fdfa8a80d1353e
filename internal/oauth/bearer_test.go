package oauth_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/oauth"
	"github.com/finsvc/finsvc/internal/tenant"
)

func TestBearer(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		a := s.org(t, "acme", "member")
		b := s.org(t, "globex", "admin")
		access, refresh := a.tokens(t)
		if st, _ := a.me(t, access); st != 200 {
			t.Fatalf("/me = %d", st)
		}
		for name, tok := range map[string]string{
			"refresh token":   refresh,
			"garbage":         "nonsense",
			"forged mac":      access[:len(access)-4] + "AAAA",
			"wrong prefix":    strings.Replace(access, "ory_at_", "ory_rt_", 1),
			"no prefix":       strings.TrimPrefix(access, "ory_at_"),
			"another's sig":   "ory_at_" + strings.Repeat("A", 43) + "." + strings.SplitN(access, ".", 2)[1],
			"authorize code":  "ory_ac_" + strings.TrimPrefix(access, "ory_at_"),
			"too long":        "ory_at_" + strings.Repeat("x", 600),
			"empty signature": "ory_at_abc.",
		} {
			if st, _ := a.me(t, tok); st != 401 {
				t.Errorf("%s: /me = %d, want 401", name, st)
			}
		}
		// Tenant A's token at tenant B.
		if st, _ := b.me(t, access); st != 401 {
			t.Fatalf("cross-tenant token: /me = %d, want 401", st)
		}
		// Missing and malformed headers: 401 with WWW-Authenticate: Bearer.
		for _, h := range []string{"", "Bearer", "Basic " + access, "Bearer  " + access, "Token " + access} {
			req, _ := http.NewRequest("GET", a.Server.URL+"/api/1.0/me", nil)
			if h != "" {
				req.Header.Set("Authorization", h)
			}
			resp, err := a.HTTPClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("header %q: %d %q", h, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
		}
		// The token in a query parameter is not looked at.
		if r := a.Do("GET", "/api/1.0/me?access_token="+url.QueryEscape(access), "", nil); r.Code != 401 {
			t.Fatalf("query token: %d", r.Code)
		}

		// The principal: user, current role, client, scopes.
		ctx := tenant.NewContext(context.Background(), a.Tenant)
		p, err := s.svc.AuthenticateBearer(ctx, access)
		if err != nil {
			t.Fatal(err)
		}
		if p.UserID != a.userID || p.Role != auth.RoleMember || p.ClientID != a.clientID || p.TenantID != a.Tenant.ID ||
			!slices.Equal(p.Scopes, []string{"clients:read", "acts:read"}) {
			t.Fatalf("principal = %+v", p)
		}
		if err := s.DB.Table("users").Where("tenant_id = ? AND id = ?", a.Tenant.ID, a.userID).Update("role", "viewer").Error; err != nil {
			t.Fatal(err)
		}
		if p, err = s.svc.AuthenticateBearer(ctx, access); err != nil || p.Role != auth.RoleViewer {
			t.Fatalf("role after change = %+v, %v", p, err)
		}
		// Expired.
		if err := s.DB.Table("oauth_access_tokens").Where("tenant_id = ?", a.Tenant.ID).
			Update("expires_at", s.DB.NowFunc().Add(-1)).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := s.svc.AuthenticateBearer(ctx, access); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("expired token: %v", err)
		}
		if st, _ := a.me(t, access); st != 401 {
			t.Fatalf("expired token: /me = %d", st)
		}
	})
}

func TestRevoke(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "admin")
		other := s.org(t, "globex", "admin")
		rev := func(tok, hint string) url.Values {
			v := url.Values{"token": {tok}, "client_id": {o.clientID}, "client_secret": {o.secret}}
			if hint != "" {
				v.Set("token_type_hint", hint)
			}
			return v
		}
		// Access token, form body.
		access, refresh := o.tokens(t)
		if r := o.post(t, "/api/oauth/revoke", rev(access, "access_token"), reqStyle{}); r.Code != 200 {
			t.Fatalf("revoke access: %d %v", r.Code, r.Body)
		}
		if st, _ := o.me(t, access); st != 401 {
			t.Fatalf("revoked access token: /me = %d", st)
		}
		// Revoking an access token revokes its family (fosite), refresh
		// token included.
		expectOAuthError(t, o.token(t, o.refreshGrant(refresh), reqStyle{}), 400, "invalid_grant")
		// Refresh token (JSON, Basic): it and its family's access tokens die.
		_, refresh1 := o.tokens(t)
		r := o.token(t, o.refreshGrant(refresh1), reqStyle{})
		access2, refresh2 := r.str("access_token"), r.str("refresh_token")
		if r.Code != 200 || refresh2 == "" {
			t.Fatalf("refresh: %d %v", r.Code, r.Body)
		}
		if r := o.post(t, "/api/oauth/revoke", rev(refresh2, ""), reqStyle{json: true, basic: true}); r.Code != 200 {
			t.Fatalf("revoke refresh: %d %v", r.Code, r.Body)
		}
		expectOAuthError(t, o.token(t, o.refreshGrant(refresh2), reqStyle{}), 400, "invalid_grant")
		if st, _ := o.me(t, access2); st != 401 {
			t.Fatalf("access token of a revoked refresh token: /me = %d", st)
		}
		// Unknown token: 200 (RFC 7009).
		if r := o.post(t, "/api/oauth/revoke", rev("ory_at_unknown.token", ""), reqStyle{}); r.Code != 200 {
			t.Fatalf("unknown token: %d %v", r.Code, r.Body)
		}
		// Bad client credentials; another tenant's client.
		v := rev(access, "")
		v.Set("client_secret", "nope")
		expectOAuthError(t, o.post(t, "/api/oauth/revoke", v, reqStyle{}), 401, "invalid_client")
		v = rev(access, "")
		v.Set("client_id", other.clientID)
		v.Set("client_secret", other.secret)
		expectOAuthError(t, o.post(t, "/api/oauth/revoke", v, reqStyle{}), 401, "invalid_client")
		// No client credentials at all; no token.
		expectOAuthError(t, o.post(t, "/api/oauth/revoke", url.Values{"token": {access}}, reqStyle{}), 401, "invalid_client")
		v = rev("", "")
		v.Del("token")
		expectOAuthError(t, o.post(t, "/api/oauth/revoke", v, reqStyle{}), 400, "invalid_request")
		// Another tenant's token cannot be revoked from here.
		oa, _ := other.tokens(t)
		if r := o.post(t, "/api/oauth/revoke", rev(oa, ""), reqStyle{}); r.Code != 200 {
			t.Fatalf("foreign token: %d", r.Code)
		}
		if st, _ := other.me(t, oa); st != 200 {
			t.Fatalf("a foreign revoke killed tenant B's token: %d", st)
		}
	})
}

// TestRevokeOtherClientsToken: a client cannot revoke another client's
// token (RFC 7009 section 2.1).
func TestRevokeOtherClientsToken(t *testing.T) {
	s := newServer(t, serverOpt{})
	o := s.org(t, "acme", "admin")
	id2, secret2, err := oauth.CreateApp(context.Background(), s.DB, o.Tenant.ID, "Second", []string{testRedirect}, nil)
	if err != nil {
		t.Fatal(err)
	}
	access, _ := o.tokens(t)
	v := url.Values{"token": {access}, "client_id": {id2}, "client_secret": {secret2}}
	expectOAuthError(t, o.post(t, "/api/oauth/revoke", v, reqStyle{}), 400, "unauthorized_client")
	if st, _ := o.me(t, access); st != 200 {
		t.Fatalf("token revoked by another client: %d", st)
	}
}
