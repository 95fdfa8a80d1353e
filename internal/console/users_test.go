package console_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/testdb"
)

func (o *org) user(t *testing.T, id int64) models.User {
	t.Helper()
	var u models.User
	o.Do("GET", fmt.Sprintf("/api/1.0/users/%d", id), o.admin.token, nil).Status(t, http.StatusOK).Decode(t, &u)
	return u
}

// TestUserPages: admins list, create, change roles and deactivate through
// internal/users, whose last-admin rule holds (the refusal is shown on the
// page); members and viewers get 403; another tenant's user id is 404.
func TestUserPages(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme, other := newOrg(t, env, "acme"), newOrg(t, env, "other")
			for _, p := range []person{acme.member, acme.viewer} {
				c := acme.client(t)
				c.login(p)
				if r := c.do("GET", "/console/users", nil); r.code != http.StatusForbidden {
					t.Fatalf("%s: %d", p.email, r.code)
				}
				if r := c.post("/console/webhooks", "/console/users"); r.code != http.StatusForbidden {
					t.Fatalf("%s creates: %d", p.email, r.code)
				}
			}
			admin := acme.client(t)
			admin.login(acme.admin)
			page := admin.do("GET", "/console/users", nil)
			if page.code != 200 || !strings.Contains(page.body, acme.viewer.email) || strings.Contains(page.body, other.viewer.email) {
				t.Fatalf("list: %d", page.code)
			}
			tok := csrf(t, page.body)
			// The last admin cannot step down: refused on the page, unchanged.
			r := admin.do("POST", fmt.Sprintf("/console/users/%d/role", acme.admin.id), url.Values{"csrf_token": {tok}, "role": {"viewer"}})
			if r.code != http.StatusBadRequest || !strings.Contains(r.body, `id="error"`) {
				t.Fatalf("demote the last admin: %d", r.code)
			}
			if m := regexp.MustCompile(`id="error">([^<]*)<`).FindStringSubmatch(r.body); m == nil || !strings.HasSuffix(m[1], ".") || strings.Contains(m[1], ": ") {
				t.Errorf("the refusal is not in sentences: %q", m)
			}
			if u := acme.user(t, acme.admin.id); u.Role != "admin" {
				t.Fatalf("the last admin became %s", u.Role)
			}
			if r := admin.confirm("/console/users", fmt.Sprintf("/console/users/%d/deactivate", acme.admin.id)); r.code != http.StatusBadRequest {
				t.Fatalf("deactivate the last admin: %d", r.code)
			}
			// Another tenant's user id (higher than any here) is 404.
			for range 3 {
				other.User("viewer")
			}
			if r := admin.do("POST", "/console/users/6/role", url.Values{"csrf_token": {tok}, "role": {"admin"}}); r.code != http.StatusNotFound {
				t.Fatalf("another tenant's user: %d", r.code)
			}
			// Without the CSRF token nothing changes.
			if r := admin.do("POST", fmt.Sprintf("/console/users/%d/role", acme.viewer.id), url.Values{"role": {"admin"}}); r.code != http.StatusForbidden {
				t.Fatalf("no csrf: %d", r.code)
			}
			if u := acme.user(t, acme.viewer.id); u.Role != "viewer" {
				t.Fatalf("viewer became %s", u.Role)
			}
		})
	}
}

// TestUserPagePasswordPolicy: the console's "Add a user" form refuses the
// passwords the policy refuses, saying why on the page, and creates nobody.
func TestUserPagePasswordPolicy(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme := newOrg(t, env, "acme")
			admin := acme.client(t)
			admin.login(acme.admin)
			tok := csrf(t, admin.do("GET", "/console/users", nil).body)
			form := func(pw string) url.Values {
				return url.Values{"csrf_token": {tok}, "email": {"kari.nordmann@acme.example.com"}, "role": {"member"}, "password": {pw}}
			}
			for _, tc := range []struct{ password, why string }{
				{"password", `id="password-error">The password must be at least 12 characters`},
				{"12345678", `id="password-error">The password must be at least 12 characters`},
				{"        ", `id="password-error">The password must be at least 12 characters`},
				{"password1234", `id="password-error">The password is a commonly used password (`},
				{"Qwerty123456", `id="password-error">The password is a commonly used password (`},
				{"acme-acme-2024", "organization's name"},
			} {
				r := admin.do("POST", "/console/users", form(tc.password))
				if body := html.UnescapeString(r.body); r.code != http.StatusBadRequest || !strings.Contains(body, tc.why) ||
					!strings.Contains(body, "The user was not added: see the message beside the field.") {
					t.Errorf("%q: %d, want 400 saying %q beside the field", tc.password, r.code, tc.why)
				}
			}
			// A taken email: one sentence beside the field, no run-on.
			taken := form("cantaloupe in a red wheelbarrow")
			taken.Set("email", acme.viewer.email)
			r := admin.do("POST", "/console/users", taken)
			if body := html.UnescapeString(r.body); r.code != http.StatusBadRequest || !strings.Contains(body, `id="email-error">The email is already registered.</p>`) ||
				strings.Contains(body, "already exists") || !strings.Contains(body, `value="`+acme.viewer.email+`"`) {
				t.Errorf("a taken email: %d %s", r.code, body)
			}
			var list models.UserList
			acme.Do("GET", "/api/1.0/users", acme.admin.token, nil).Status(t, http.StatusOK).Decode(t, &list)
			if list.Meta.Total != 3 {
				t.Fatalf("%d users after refusals, want 3", list.Meta.Total)
			}
			if r := admin.do("POST", "/console/users", form("cantaloupe in a red wheelbarrow")); r.code != http.StatusSeeOther {
				t.Fatalf("a passphrase: %d", r.code)
			}
			if page := admin.do("GET", "/console/users", nil); !strings.Contains(page.body, "kari.nordmann@acme.example.com was created") {
				t.Errorf("no notice of the new user")
			}
		})
	}
}

// TestUserPageOneTimePassword: an admin gives a user a new one-time
// password from the console; it is shown once, the user's sessions end,
// and it signs in once, straight to choosing a password.
func TestUserPageOneTimePassword(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme := newOrg(t, env, "acme")
			member := acme.client(t)
			member.login(acme.member)
			admin := acme.client(t)
			admin.login(acme.admin)
			tok := csrf(t, admin.do("GET", "/console/users", nil).body)
			r := admin.do("POST", fmt.Sprintf("/console/users/%d/one-time-password", acme.member.id), url.Values{"csrf_token": {tok}})
			if r.code != http.StatusSeeOther {
				t.Fatalf("issue: %d", r.code)
			}
			page := admin.do("GET", "/console/users", nil)
			m := regexp.MustCompile(`<code id="secret">([^<]+)</code>`).FindStringSubmatch(page.body)
			if m == nil || !strings.Contains(page.body, "works for one sign-in until") {
				t.Fatalf("no one-time password shown: %s", page.body)
			}
			otp := html.UnescapeString(m[1])
			if again := admin.do("GET", "/console/users", nil); strings.Contains(again.body, otp) {
				t.Error("the one-time password is shown twice")
			}
			if r := member.do("GET", "/console/webhooks", nil); r.code != http.StatusFound || !strings.HasPrefix(r.location, "/login") {
				t.Errorf("the member's session after the new one-time password: %d %q", r.code, r.location)
			}
			c := acme.client(t)
			login := c.do("GET", "/login", nil)
			r = c.do("POST", "/login", url.Values{"csrf_token": {csrf(t, login.body)}, "email": {acme.member.email}, "password": {otp}})
			if r.code != http.StatusSeeOther || !strings.HasPrefix(r.location, "/account/password") {
				t.Fatalf("sign-in with the one-time password: %d %q", r.code, r.location)
			}
			// Members may not issue one; a deactivated user gets none.
			m2 := acme.client(t)
			m2.login(acme.viewer)
			if r := m2.post("/console/webhooks", fmt.Sprintf("/console/users/%d/one-time-password", acme.admin.id)); r.code != http.StatusForbidden {
				t.Errorf("a viewer issues one: %d", r.code)
			}
			acme.Do("DELETE", fmt.Sprintf("/api/1.0/users/%d", acme.viewer.id), acme.admin.token, nil).Status(t, http.StatusNoContent)
			r = admin.do("POST", fmt.Sprintf("/console/users/%d/one-time-password", acme.viewer.id), url.Values{"csrf_token": {tok}})
			if r.code != http.StatusBadRequest || !strings.Contains(r.body, "deactivated") {
				t.Errorf("a deactivated user: %d", r.code)
			}
		})
	}
}
