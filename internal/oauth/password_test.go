package oauth_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/auth"
)

// TestOneTimePasswordSignIn: a generated password signs in once and leads
// straight to "choose your password"; until then the console, the consent
// page, the developer area and the account pages all send the user there;
// after choosing, the user goes where they were going, and the one-time
// password no longer works.
func TestOneTimePasswordSignIn(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		admin := s.org(t, "acme", auth.RoleAdmin)
		u, otp, err := s.svcUsers().CreateWithPassword(admin.Ctx, "ola@acme.example.com", "Ola", auth.RoleAdmin, "")
		if err != nil {
			t.Fatal(err)
		}
		ola := &org{TenantEnv: admin.TenantEnv, s: s, userID: u.ID, email: u.Email, clientID: admin.clientID, secret: admin.secret, redirect: admin.redirect}
		base := ola.Server.URL
		signIn := func(c *http.Client, password, next string) page {
			t.Helper()
			p := do(t, c, "GET", base+"/login", nil)
			return do(t, c, "POST", base+"/login", url.Values{"csrf_token": {csrfOf(t, p.Body)}, "email": {ola.email}, "password": {password}, "next": {next}})
		}
		c := ola.browser(t)
		p := signIn(c, otp, "/console/acts")
		if p.Code != http.StatusSeeOther || p.Location != "/account/password?next=%2Fconsole%2Facts" {
			t.Fatalf("sign-in with the one-time password: %d %q", p.Code, p.Location)
		}
		for _, path := range []string{"/console/webhooks", "/console/users", "/account/apps", "/developer/my-apps", "/oauth/authorize?" + ola.authParams("state-"+randHex(6)).Encode()} {
			p := do(t, c, "GET", base+path, nil)
			if p.Code != http.StatusFound || p.Location != "/account/password?next="+url.QueryEscape(path) {
				t.Errorf("GET %s before choosing a password: %d %q", path, p.Code, p.Location)
			}
		}
		p = do(t, c, "GET", base+p.Location, nil)
		if p.Code != http.StatusOK || !strings.Contains(p.Body, "Choose your password") || strings.Contains(p.Body, `name="current_password"`) {
			t.Fatalf("the password page: %d %s", p.Code, p.Body)
		}
		choose := func(pw, again string) page {
			t.Helper()
			form := do(t, c, "GET", base+"/account/password?next=%2Fconsole%2Facts", nil)
			return do(t, c, "POST", base+"/account/password", url.Values{"csrf_token": {csrfOf(t, form.Body)}, "next": {"/console/acts"}, "password": {pw}, "password_confirm": {again}})
		}
		for _, tc := range []struct{ pw, again, why string }{
			{"Qwerty123456", "Qwerty123456", "commonly used password"},
			{"password", "password", "at least 12 characters"},
			{"ola.acme.2024", "ola.acme.2024", "email address or the organization"},
			{"cantaloupe in a red wheelbarrow", "cantaloupe in a red wheelbarrows", "two new passwords differ"},
		} {
			if p := choose(tc.pw, tc.again); p.Code != http.StatusBadRequest || !strings.Contains(html.UnescapeString(p.Body), tc.why) {
				t.Errorf("choosing %q: %d, want 400 saying %q", tc.pw, p.Code, tc.why)
			}
		}
		if p := choose("cantaloupe in a red wheelbarrow", "cantaloupe in a red wheelbarrow"); p.Code != http.StatusSeeOther || p.Location != "/console/acts" {
			t.Fatalf("choosing a good password: %d %q", p.Code, p.Location)
		}
		if p := do(t, c, "GET", base+"/console/acts", nil); p.Code != http.StatusOK {
			t.Fatalf("the console after choosing: %d", p.Code)
		}
		if p := signIn(ola.browser(t), otp, ""); p.Code != http.StatusUnauthorized {
			t.Errorf("the one-time password again: %d", p.Code)
		}
		if p := signIn(ola.browser(t), "cantaloupe in a red wheelbarrow", ""); p.Code != http.StatusSeeOther || p.Location != "/console/webhooks" {
			t.Errorf("the chosen password: %d %q", p.Code, p.Location)
		}
	})
}

// TestChangePassword: a signed-in user changes their password with the
// current one; their other sessions end, this one stays, and their apps'
// tokens keep working.
func TestChangePassword(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", auth.RoleViewer)
		access, _ := o.tokens(t)
		a, b := o.browser(t), o.browser(t)
		o.login(t, a)
		o.login(t, b)
		base := o.Server.URL
		change := func(current, pw string) page {
			t.Helper()
			form := do(t, a, "GET", base+"/account/password", nil)
			if !strings.Contains(form.Body, `name="current_password"`) {
				t.Fatalf("the change form lacks the current password: %s", form.Body)
			}
			return do(t, a, "POST", base+"/account/password", url.Values{"csrf_token": {csrfOf(t, form.Body)}, "current_password": {current}, "password": {pw}, "password_confirm": {pw}})
		}
		if p := change("not my password at all", "blue kettle on a quiet harbor"); p.Code != http.StatusBadRequest || !strings.Contains(p.Body, "The password you typed as current is not your current password.") {
			t.Fatalf("wrong current password: %d", p.Code)
		}
		if p := change(testPassword, "password1234"); p.Code != http.StatusBadRequest || !strings.Contains(p.Body, "commonly used password") {
			t.Fatalf("a common new password: %d", p.Code)
		}
		if p := do(t, b, "GET", base+"/account/apps", nil); p.Code != http.StatusOK {
			t.Fatalf("a refused change ended the other session: %d", p.Code)
		}
		p := change(testPassword, "blue kettle on a quiet harbor")
		if p.Code != http.StatusSeeOther || p.Location != "/account/password" {
			t.Fatalf("change: %d %q", p.Code, p.Location)
		}
		if p := do(t, a, "GET", base+"/account/password", nil); !strings.Contains(p.Body, "Your password was changed") {
			t.Error("no notice after the change")
		}
		if p := do(t, a, "GET", base+"/account/apps", nil); p.Code != http.StatusOK {
			t.Errorf("this session after the change: %d", p.Code)
		}
		if p := do(t, b, "GET", base+"/account/apps", nil); p.Code != http.StatusFound || !strings.HasPrefix(p.Location, "/login") {
			t.Errorf("the other session after the change: %d %q", p.Code, p.Location)
		}
		if st, _ := o.me(t, access); st != http.StatusOK {
			t.Errorf("the app's token after the change: %d", st)
		}
		if _, err := s.svcUsers().Authenticate(o.Ctx, o.email, testPassword); err == nil {
			t.Error("the old password still works")
		}
		if _, err := s.svcUsers().Authenticate(o.Ctx, o.email, "blue kettle on a quiet harbor"); err != nil {
			t.Errorf("the new password: %v", err)
		}
		// Without a session: to the sign-in page.
		if p := do(t, o.browser(t), "GET", base+"/account/password", nil); p.Code != http.StatusFound || !strings.HasPrefix(p.Location, "/login") {
			t.Errorf("signed out: %d %q", p.Code, p.Location)
		}
	})
}
