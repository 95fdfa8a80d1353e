package console_test

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/testdb"
)

// TestExpiredSessionKeepsThePage: a form posted after the session expired
// is dropped; the browser goes to the sign-in page, which says the session
// expired, and after signing in returns to the page the form was on, with
// nothing applied. A page fetched after expiry is kept as the target too.
func TestExpiredSessionKeepsThePage(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			// Sessions end at their expires_at, by the service's clock.
			expire := func() {
				t.Helper()
				if err := env.DB.Exec("UPDATE web_sessions SET expires_at = ?", time.Now().Add(-time.Minute).UTC()).Error; err != nil {
					t.Fatal(err)
				}
			}
			acme := newOrg(t, env, "acme")
			admin := acme.client(t)
			admin.login(acme.admin)
			page := admin.do("GET", "/console/users", nil)
			if page.code != http.StatusOK {
				t.Fatalf("users page: %d", page.code)
			}
			tok := csrf(t, page.body)

			expire()

			// The dropped form: change the viewer's role.
			form := url.Values{"csrf_token": {tok}, "role": {"admin"}}
			req, _ := http.NewRequest("POST", acme.Server.URL+fmt.Sprintf("/console/users/%d/role", acme.viewer.id), strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Accept", "text/html")
			req.Header.Set("Referer", "http://"+acme.Host+"/console/users?page=1")
			resp, err := admin.hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			loc := resp.Header.Get("Location")
			if resp.StatusCode != http.StatusSeeOther || loc != "/login?expired=1&next=%2Fconsole%2Fusers%3Fpage%3D1" {
				t.Fatalf("form after expiry: %d %q", resp.StatusCode, loc)
			}
			login := admin.do("GET", loc, nil)
			if login.code != http.StatusOK || !strings.Contains(login.body, "Your session expired; sign in again.") ||
				!strings.Contains(html.UnescapeString(login.body), `name="next" value="/console/users?page=1"`) {
				t.Fatalf("sign-in page after expiry: %d %s", login.code, login.body)
			}
			r := admin.do("POST", "/login", url.Values{"csrf_token": {csrf(t, login.body)}, "email": {acme.admin.email}, "password": {password}, "next": {"/console/users?page=1"}})
			if r.code != http.StatusSeeOther || r.location != "/console/users?page=1" {
				t.Fatalf("sign-in: %d %q", r.code, r.location)
			}
			if p := admin.do("GET", r.location, nil); p.code != http.StatusOK || strings.Contains(p.body, "is now admin") {
				t.Fatalf("back on the page: %d", p.code)
			}
			if u := acme.user(t, acme.viewer.id); u.Role != "viewer" {
				t.Fatalf("the dropped form was applied: the viewer is %s", u.Role)
			}

			// A page fetched after expiry is the target; a browser that
			// never signed in is not told its session expired.
			expire()
			if r := admin.do("GET", "/console/acts?uuid=x", nil); r.code != http.StatusFound || r.location != "/login?expired=1&next=%2Fconsole%2Facts%3Fuuid%3Dx" {
				t.Errorf("page after expiry: %d %q", r.code, r.location)
			}
			if r := acme.client(t).do("GET", "/console/acts", nil); r.code != http.StatusFound || r.location != "/login?next=%2Fconsole%2Facts" {
				t.Errorf("never signed in: %d %q", r.code, r.location)
			}
			// A foreign Referer is not a target.
			fresh := acme.client(t)
			req, _ = http.NewRequest("POST", acme.Server.URL+"/console/users", strings.NewReader("role=admin"))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Referer", "https://evil.example.com/console/users")
			resp, err = fresh.hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if loc := resp.Header.Get("Location"); loc != "/login?next=%2Fconsole%2Fwebhooks" {
				t.Errorf("foreign Referer: %q", loc)
			}
		})
	}
}
