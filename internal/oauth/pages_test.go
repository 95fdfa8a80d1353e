package oauth_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/oauth/store"
)

var (
	clientIDRE = regexp.MustCompile(`id="client_id">([^<]+)<`)
	secretRE   = regexp.MustCompile(`id="client_secret">([^<]+)<`)
)

func TestDeveloperApps(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "admin")
		c := o.browser(t)
		// Signed out: to the login page.
		if p := do(t, c, "GET", o.Server.URL+"/developer/my-apps", nil); p.Code != http.StatusFound || !strings.HasPrefix(p.Location, "/login") {
			t.Fatalf("signed out: %d %q", p.Code, p.Location)
		}
		o.login(t, c)
		p := do(t, c, "GET", o.Server.URL+"/developer/my-apps", nil)
		if p.Code != 200 || !strings.Contains(p.Body, o.clientID) {
			t.Fatalf("list: %d", p.Code)
		}
		csrf := csrfOf(t, p.Body)
		// Without CSRF token: refused, nothing created.
		form := url.Values{"name": {"Ledger Sync"}, "redirect_uris": {"https://ledger.example.com/cb\nhttp://127.0.0.1:9999/cb"},
			"scopes": {"clients:read", "acts:write"}}
		if p := do(t, c, "POST", o.Server.URL+"/developer/my-apps", form); p.Code != http.StatusForbidden {
			t.Fatalf("no csrf: %d", p.Code)
		}
		// Invalid input: a clear message.
		bad := cloneValues(form)
		bad.Set("csrf_token", csrf)
		bad.Set("redirect_uris", "http://evil.example.com/cb")
		if p := do(t, c, "POST", o.Server.URL+"/developer/my-apps", bad); p.Code != 400 || !strings.Contains(p.Body, "https") {
			t.Fatalf("bad redirect: %d", p.Code)
		}
		// No scope checked (the form's default): refused, not every scope.
		none := cloneValues(form)
		none.Set("csrf_token", csrf)
		none.Del("scopes")
		if p := do(t, c, "POST", o.Server.URL+"/developer/my-apps", none); p.Code != 400 || !strings.Contains(p.Body, "at least one scope") {
			t.Fatalf("no scopes: %d", p.Code)
		}
		form.Set("csrf_token", csrf)
		p = do(t, c, "POST", o.Server.URL+"/developer/my-apps", form)
		// POST-redirect-GET: the secret is on the page the POST redirects to.
		if p.Code != http.StatusSeeOther || p.Location != "/developer/my-apps" {
			t.Fatalf("create: %d %q %s", p.Code, p.Location, p.Body)
		}
		p = do(t, c, "GET", o.Server.URL+p.Location, nil)
		if p.Code != http.StatusOK || !secretRE.MatchString(p.Body) {
			t.Fatalf("after create: %d %s", p.Code, p.Body)
		}
		id := html.UnescapeString(clientIDRE.FindStringSubmatch(p.Body)[1])
		secret := html.UnescapeString(secretRE.FindStringSubmatch(p.Body)[1])
		if !strings.HasPrefix(id, "app_") || len(secret) != 43 {
			t.Fatalf("client id %q, secret length %d", id, len(secret))
		}
		// Stored as SHA-256, never raw; shown once only.
		var row store.Client
		if err := s.DB.Where("tenant_id = ? AND id = ?", o.Tenant.ID, id).Take(&row).Error; err != nil {
			t.Fatal(err)
		}
		if row.SecretHash != store.HashSecret(secret) || strings.Contains(row.SecretHash, secret) || row.Scopes != "clients:read acts:write" {
			t.Fatalf("stored app %+v", row)
		}
		// Reloading shows the list, without the secret and without a second app.
		if p := do(t, c, "GET", o.Server.URL+"/developer/my-apps", nil); strings.Contains(p.Body, secret) || strings.Count(p.Body, "<td>Ledger Sync</td>") != 1 {
			t.Fatal("secret shown again, or app missing from the list or listed twice")
		}
		var n int64
		if err := s.DB.Model(&store.Client{}).Where("tenant_id = ? AND name = ?", o.Tenant.ID, "Ledger Sync").Count(&n).Error; err != nil || n != 1 {
			t.Fatalf("apps named Ledger Sync: %d %v", n, err)
		}
		// The new app works at the token endpoint (via a code for it).
		app := &org{TenantEnv: o.TenantEnv, s: s, userID: o.userID, email: o.email, clientID: id, secret: secret, redirect: "https://ledger.example.com/cb"}
		params := app.authParams("state-ledger")
		params.Set("scope", "clients:read")
		if r := app.token(t, app.codeGrant(app.code(t, params)), reqStyle{}); r.Code != 200 {
			t.Fatalf("new app exchange: %d %v", r.Code, r.Body)
		}
		// Rotate with no overlap: new secret shown once; the old one stops
		// working at once.
		p = do(t, c, "POST", o.Server.URL+"/developer/my-apps/"+id+"/rotate", url.Values{"csrf_token": {csrf}, "overlap": {"now"}})
		if p.Code != http.StatusSeeOther {
			t.Fatalf("rotate: %d", p.Code)
		}
		p = do(t, c, "GET", o.Server.URL+p.Location, nil)
		newSecret := html.UnescapeString(secretRE.FindStringSubmatch(p.Body)[1])
		if newSecret == secret {
			t.Fatal("rotation kept the secret")
		}
		code := app.code(t, params)
		expectOAuthError(t, app.token(t, app.codeGrant(code), reqStyle{}), 401, "invalid_client")
		app.secret = newSecret
		if r := app.token(t, app.codeGrant(code), reqStyle{}); r.Code != 200 {
			t.Fatalf("exchange with rotated secret: %d %v", r.Code, r.Body)
		}
		// Delete: gone, and its tokens with it.
		r := app.token(t, app.codeGrant(app.code(t, params)), reqStyle{})
		access := r.str("access_token")
		if st, _ := app.me(t, access); r.Code != 200 || st != 200 {
			t.Fatalf("token before delete: %d, /me %d", r.Code, st)
		}
		// The page's form asks first, naming what will happen; only the
		// confirmation's form deletes.
		p = do(t, c, "POST", o.Server.URL+"/developer/my-apps/"+id+"/delete", url.Values{"csrf_token": {csrf}})
		if p.Code != http.StatusOK || !strings.Contains(html.UnescapeString(p.Body), "Its client id "+id+" and its secrets stop working") {
			t.Fatalf("delete asks: %d %s", p.Code, p.Body)
		}
		if st, _ := app.me(t, access); st != 200 {
			t.Fatal("asking deleted the app")
		}
		p = do(t, c, "POST", o.Server.URL+"/developer/my-apps/"+id+"/delete", url.Values{"csrf_token": {csrfOf(t, p.Body)}})
		if p.Code != http.StatusSeeOther {
			t.Fatalf("delete: %d", p.Code)
		}
		if p := do(t, c, "GET", o.Server.URL+p.Location, nil); !strings.Contains(p.Body, "was deleted; its tokens no longer work") {
			t.Error("no notice after the deletion")
		}
		if st, _ := app.me(t, access); st != 401 {
			t.Fatalf("token of a deleted app: %d", st)
		}
		expectOAuthError(t, app.token(t, app.codeGrant("x"), reqStyle{}), 401, "invalid_client")

		// Members may not manage apps.
		m := s.org(t, "members", "member")
		mc := m.browser(t)
		m.login(t, mc)
		if p := do(t, mc, "GET", m.Server.URL+"/developer/my-apps", nil); p.Code != http.StatusForbidden || !strings.Contains(p.Body, "Role member may not manage developer apps.") {
			t.Fatalf("member: %d %s", p.Code, p.Body)
		}
	})
}

func TestAccountApps(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "viewer")
		access, refresh := o.tokens(t)
		c := o.browser(t)
		o.login(t, c)
		p := do(t, c, "GET", o.Server.URL+"/account/apps", nil)
		if p.Code != 200 || !strings.Contains(p.Body, "Test App") {
			t.Fatalf("list: %d %s", p.Code, p.Body)
		}
		csrf := csrfOf(t, p.Body)
		if p := do(t, c, "POST", o.Server.URL+"/account/apps/"+o.clientID+"/revoke", url.Values{"csrf_token": {"forged"}}); p.Code != http.StatusForbidden {
			t.Fatalf("forged csrf: %d", p.Code)
		}
		if st, _ := o.me(t, access); st != 200 {
			t.Fatal("token died without a revoke")
		}
		p = do(t, c, "POST", o.Server.URL+"/account/apps/"+o.clientID+"/revoke", url.Values{"csrf_token": {csrf}})
		if p.Code != http.StatusOK || !strings.Contains(p.Body, "Test App can no longer act on your behalf") {
			t.Fatalf("revoke asks: %d %s", p.Code, p.Body)
		}
		if st, _ := o.me(t, access); st != 200 {
			t.Fatal("asking revoked the token")
		}
		// The list's token again only asks again.
		if again := do(t, c, "POST", o.Server.URL+"/account/apps/"+o.clientID+"/revoke", url.Values{"csrf_token": {csrf}}); again.Code != http.StatusOK {
			t.Fatalf("revoke asks again: %d", again.Code)
		}
		p = do(t, c, "POST", o.Server.URL+"/account/apps/"+o.clientID+"/revoke", url.Values{"csrf_token": {csrfOf(t, p.Body)}})
		if p.Code != http.StatusSeeOther {
			t.Fatalf("revoke: %d", p.Code)
		}
		if p := do(t, c, "GET", o.Server.URL+"/account/apps", nil); !strings.Contains(p.Body, "Test App no longer has access to your account.") {
			t.Error("no notice after the revocation")
		}
		if st, _ := o.me(t, access); st != 401 {
			t.Fatalf("access token after revoking the app: %d", st)
		}
		expectOAuthError(t, o.token(t, o.refreshGrant(refresh), reqStyle{}), 400, "invalid_grant")
		if p := do(t, c, "GET", o.Server.URL+"/account/apps", nil); strings.Contains(p.Body, "Test App") {
			t.Fatal("revoked app still listed")
		}
		// Consent is asked again.
		params := o.authParams("state-again")
		if p := do(t, c, "GET", o.Server.URL+"/oauth/authorize?"+params.Encode(), nil); p.Code != 200 {
			t.Fatalf("consent after revoke: %d", p.Code)
		}
		// Logout ends the session server-side.
		var before, n int64
		s.DB.Table("web_sessions").Where("tenant_id = ?", o.Tenant.ID).Count(&before)
		p = do(t, c, "GET", o.Server.URL+"/account/apps", nil)
		if p = do(t, c, "POST", o.Server.URL+"/logout", url.Values{"csrf_token": {logoutCSRF(t, p.Body)}}); p.Code != http.StatusSeeOther {
			t.Fatalf("logout: %d", p.Code)
		}
		if p := do(t, c, "GET", o.Server.URL+"/account/apps", nil); p.Code != http.StatusFound {
			t.Fatalf("after logout: %d", p.Code)
		}
		s.DB.Table("web_sessions").Where("tenant_id = ?", o.Tenant.ID).Count(&n)
		if n != before-1 {
			t.Fatalf("%d sessions after logout, want %d", n, before-1)
		}
	})
}

var logoutRE = regexp.MustCompile(`action="/logout"><input type="hidden" name="csrf_token" value="([^"]+)"`)

func logoutCSRF(t *testing.T, body string) string {
	m := logoutRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no logout form: %s", body)
	}
	return html.UnescapeString(m[1])
}

func TestLogin(t *testing.T) {
	s := newServer(t, serverOpt{})
	o := s.org(t, "acme", "admin")
	other := s.org(t, "globex", "admin")
	c := o.browser(t)
	p := do(t, c, "GET", o.Server.URL+"/login?next=https://evil.example.com/", nil)
	csrf := csrfOf(t, p.Body)
	if strings.Contains(p.Body, "evil.example.com") {
		t.Fatal("open redirect in next")
	}
	// Wrong password; another tenant's user.
	for _, email := range []string{o.email, other.email} {
		pw := testPassword
		if email == o.email {
			pw = "wrong password!"
		}
		p = do(t, c, "POST", o.Server.URL+"/login", url.Values{"csrf_token": {csrf}, "email": {email}, "password": {pw}})
		if p.Code != http.StatusUnauthorized || !strings.Contains(p.Body, "Invalid email or password") {
			t.Fatalf("%s: %d", email, p.Code)
		}
	}
	// Missing CSRF.
	if p := do(t, c, "POST", o.Server.URL+"/login", url.Values{"email": {o.email}, "password": {testPassword}}); p.Code != http.StatusForbidden {
		t.Fatalf("no csrf: %d", p.Code)
	}
	p = do(t, c, "POST", o.Server.URL+"/login", url.Values{"csrf_token": {csrf}, "email": {o.email}, "password": {testPassword}, "next": {"//evil.example.com"}})
	if p.Code != http.StatusSeeOther || p.Location != "/console/webhooks" {
		t.Fatalf("login: %d %q", p.Code, p.Location)
	}
	// Cookie flags.
	req, _ := http.NewRequest("POST", o.Server.URL+"/login", strings.NewReader(url.Values{"csrf_token": {csrf}, "email": {o.email}, "password": {testPassword}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	u, _ := url.Parse(o.Server.URL)
	for _, ck := range c.Jar.Cookies(u) {
		req.AddCookie(ck)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	found := false
	for _, ck := range resp.Cookies() {
		if ck.Name == "finsvc_session" {
			found = true
			if !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Domain != "" {
				t.Fatalf("session cookie flags: %+v", ck)
			}
		}
	}
	if !found {
		t.Fatal("no session cookie")
	}
	// The session cookie of tenant A means nothing at tenant B.
	bc := other.browser(t)
	bu, _ := url.Parse(other.Server.URL)
	bc.Jar.SetCookies(bu, c.Jar.Cookies(u))
	if p := do(t, bc, "GET", other.Server.URL+"/account/apps", nil); p.Code != http.StatusFound {
		t.Fatalf("tenant A's session at tenant B: %d", p.Code)
	}
}
