package oauth_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/keyring"
	"github.com/finsvc/finsvc/internal/testdb"
)

const rotatedSecret = "rotated-global-secret-9876543210zyxwvutsrqponm"

// on returns o as seen through another server of the same database (a
// replica restarted with another key ring).
func (o *org) on(s *server) *org {
	te := *o.TenantEnv
	te.Env = s.Env
	c := *o
	c.TenantEnv, c.s = &te, s
	return &c
}

// After the secret is rotated (new current, old previous), tokens issued
// under the old secret keep working until they expire: the access token
// authenticates and the refresh token refreshes, into tokens signed under
// the new secret. With the old key revoked (it leaked) they are refused at
// once, while tokens of the new secret work; without the old key at all
// they are refused too (the README's warning).
func TestTokensAcrossRotation(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			d := testdb.Open(t, dialect)
			serve := func(current, previous, revoked string) *server {
				return newServer(t, serverOpt{logger: testLogger(), opts: []apitest.Option{apitest.WithDB(d),
					apitest.WithConfig(func(c *config.Config) { c.Secret, c.SecretPrevious, c.SecretRevoked = current, previous, revoked })}})
			}
			before := serve(testSecret, "", "")
			o := before.org(t, "acme", "admin")
			access, refresh := o.tokens(t)
			access2, refresh2 := o.tokens(t)

			rotated := o.on(serve(rotatedSecret, testSecret, ""))
			if code, _ := rotated.me(t, access); code != 200 {
				t.Fatalf("old access token after rotation = %d", code)
			}
			r := rotated.token(t, rotated.refreshGrant(refresh), reqStyle{})
			if r.Code != 200 {
				t.Fatalf("old refresh token after rotation = %d %v", r.Code, r.Body)
			}
			newAccess := r.str("access_token")
			// The replica still on the old ring with the new key as
			// previous (during the rolling restart) accepts the new token.
			if code, _ := o.on(serve(testSecret, rotatedSecret, "")).me(t, newAccess); code != 200 {
				t.Fatalf("new token on a replica not yet switched = %d", code)
			}

			leaked := o.on(serve(rotatedSecret, testSecret, keyring.ID(testSecret)))
			if code, _ := leaked.me(t, access2); code != 401 {
				t.Fatalf("old access token with the old key revoked = %d", code)
			}
			// fosite answers a token whose signature matches no key as
			// a malformed request.
			expectOAuthError(t, leaked.token(t, leaked.refreshGrant(refresh2), reqStyle{}), 400, "invalid_request")
			if code, _ := leaked.me(t, newAccess); code != 200 {
				t.Fatalf("new access token with the old key revoked = %d", code)
			}

			if code, _ := o.on(serve(rotatedSecret, "", "")).me(t, access2); code != 401 {
				t.Fatalf("old access token with the old key gone = %d", code)
			}
		})
	}
}

// Forms and flash cookies across a rotation of the service secret: a form
// rendered, and a flash cookie sealed, by a replica still on the old
// secret are accepted by a replica whose ring holds it as previous (the
// rolling restart: the CSRF token checks, the new app's secret shows), and
// refused at once by a replica whose ring revokes it (a leak: the form is
// a 403, the flash shows nothing), the session itself still signed in.
func TestFormsAndFlashAcrossRotation(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			d := testdb.Open(t, dialect)
			serve := func(current, previous, revoked string) *server {
				return newServer(t, serverOpt{logger: testLogger(), opts: []apitest.Option{apitest.WithDB(d),
					apitest.WithConfig(func(c *config.Config) { c.Secret, c.SecretPrevious, c.SecretRevoked = current, previous, revoked })}})
			}
			o := serve(testSecret, "", "").org(t, "acme", "admin")
			rotated := o.on(serve(rotatedSecret, testSecret, ""))
			leaked := o.on(serve(rotatedSecret, testSecret, keyring.ID(testSecret)))

			// The sign-in form's CSRF token, made under the old secret.
			signIn := func(to *org) page {
				t.Helper()
				b := o.browser(t)
				form := do(t, b, "GET", o.Server.URL+"/login", nil)
				return do(t, b, "POST", to.Server.URL+"/login", url.Values{
					"csrf_token": {csrfOf(t, form.Body)}, "email": {o.email}, "password": {testPassword}, "next": {"/account/apps"}})
			}
			if p := signIn(rotated); p.Code != http.StatusSeeOther {
				t.Fatalf("an old form posted to a replica with the old secret as previous: %d %s", p.Code, p.Body)
			}
			if p := signIn(leaked); p.Code != http.StatusForbidden {
				t.Fatalf("an old form posted to a replica with the old secret revoked: %d %q", p.Code, p.Location)
			}

			// The flash that carries a new app's secret, sealed under the
			// old secret, opened by the other replica.
			created := func(to *org, name string) page {
				t.Helper()
				b := o.browser(t)
				o.login(t, b)
				form := do(t, b, "GET", o.Server.URL+"/developer/my-apps", nil)
				p := do(t, b, "POST", o.Server.URL+"/developer/my-apps", url.Values{"csrf_token": {csrfOf(t, form.Body)},
					"name": {name}, "redirect_uris": {"https://ledger.example.com/cb"}, "scopes": {"acts:read"}})
				if p.Code != http.StatusSeeOther {
					t.Fatalf("create an app: %d %s", p.Code, p.Body)
				}
				return do(t, b, "GET", to.Server.URL+p.Location, nil)
			}
			if p := created(rotated, "Ledger One"); p.Code != http.StatusOK || !secretRE.MatchString(p.Body) {
				t.Fatalf("an old flash on a replica with the old secret as previous: %d, no secret shown", p.Code)
			}
			if p := created(leaked, "Ledger Two"); p.Code != http.StatusOK || secretRE.MatchString(p.Body) || !strings.Contains(p.Body, "<td>Ledger Two</td>") {
				t.Fatalf("an old flash on a replica with the old secret revoked: %d, secret shown", p.Code)
			}
		})
	}
}
