package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

var shownSecretRE = regexp.MustCompile(`<code id="secret">[^<]+</code>`)

// Every console page that shows a secret once answers Cache-Control:
// no-store: a new webhook's signing secret, a rotated one, a revealed one,
// a new user's generated one-time password and a one-time password issued
// again. A browser or a proxy never keeps a copy of the page. (The POST
// before it answers a 303 that carries the secret only sealed in the flash
// cookie; a 303 without explicit freshness is not stored by caches.)
func TestSecretPagesAreNotCached(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme := newOrg(t, env, "acme")
			admin := acme.client(t)
			admin.login(acme.admin)
			seeOther := func(what string, r resp) {
				t.Helper()
				if r.code != http.StatusSeeOther {
					t.Fatalf("%s: %d, want 303\n%.600s", what, r.code, r.body)
				}
			}
			noStore := func(what string, r resp) {
				t.Helper()
				if r.code != http.StatusOK {
					t.Fatalf("%s: %d, want 200\n%.600s", what, r.code, r.body)
				}
				if got := r.header.Get("Cache-Control"); got != "no-store" {
					t.Errorf("%s: Cache-Control %q, want no-store", what, got)
				}
			}
			shown := func(what, path string) {
				t.Helper()
				r := admin.do("GET", path, nil)
				noStore(what+": the page that shows it", r)
				if !shownSecretRE.MatchString(r.body) {
					t.Fatalf("%s: no secret shown on %s", what, path)
				}
			}

			tok := csrf(t, admin.do("GET", "/console/webhooks/new", nil).body)
			r := admin.do("POST", "/console/webhooks", url.Values{"csrf_token": {tok}, "event": {outbox.ActCreated}, "target": {"https://127.0.0.1:9/hook"}})
			seeOther("create a webhook", r)
			hook := r.location
			shown("create a webhook", hook)

			_, tok = admin.ask(hook, hook+"/rotate")
			r = admin.do("POST", hook+"/rotate", url.Values{"csrf_token": {tok}, "overlap": {"24h"}})
			seeOther("rotate a webhook's secret", r)
			shown("rotate a webhook's secret", r.location)

			form := admin.do("GET", hook+"/secret", nil)
			r = admin.do("POST", hook+"/secret", url.Values{"csrf_token": {csrf(t, form.body)}, "password": {password}})
			seeOther("reveal a webhook's secret", r)
			rev := admin.do("GET", r.location, nil)
			noStore("reveal a webhook's secret: the page that shows it", rev)
			if len(revealed(rev.body)) == 0 {
				t.Fatal("reveal: no secret shown")
			}

			tok = csrf(t, admin.do("GET", "/console/users", nil).body)
			r = admin.do("POST", "/console/users", url.Values{"csrf_token": {tok}, "email": {"new@acme.example.com"}, "name": {"New"}, "role": {"member"}})
			seeOther("create a user with a one-time password", r)
			shown("create a user with a one-time password", r.location)

			tok = csrf(t, admin.do("GET", "/console/users", nil).body)
			r = admin.do("POST", fmt.Sprintf("/console/users/%d/one-time-password", acme.member.id), url.Values{"csrf_token": {tok}})
			seeOther("issue a one-time password", r)
			shown("issue a one-time password", r.location)
		})
	}
}
