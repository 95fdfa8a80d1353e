package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/testdb"
)

// TestWebhookPagesRoles: the console applies the API's rules. A viewer
// reads every registration and changes none; a member sees and changes only
// the registrations they created (another's is 404); another tenant's ids
// are 404; a form without its CSRF token changes nothing; signed out, the
// pages send the browser to the sign-in page.
func TestWebhookPagesRoles(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme, other := newOrg(t, env, "acme"), newOrg(t, env, "other")
			mine := acme.webhook(t, acme.admin, "https://127.0.0.1:9/admin")
			theirs := acme.webhook(t, acme.member, "https://127.0.0.1:9/member")
			foreign := other.foreignWebhook(t)
			path := func(id int64) string { return fmt.Sprintf("/console/webhooks/%d", id) }

			anon := acme.client(t)
			if r := anon.do("GET", path(mine.Id), nil); r.code != http.StatusFound || r.location != "/login?next="+url.QueryEscape(path(mine.Id)) {
				t.Fatalf("signed out: %d %q", r.code, r.location)
			}

			viewer := acme.client(t)
			viewer.login(acme.viewer)
			if r := viewer.do("GET", "/console/webhooks", nil); r.code != 200 || !strings.Contains(r.body, "/admin") || !strings.Contains(r.body, "/member") {
				t.Fatalf("viewer list: %d", r.code)
			}
			r := viewer.do("GET", path(mine.Id), nil)
			if r.code != 200 || !strings.Contains(r.body, `id="readonly"`) || strings.Contains(r.body, `id="test"`) {
				t.Fatalf("viewer page: %d", r.code)
			}
			if r := viewer.post(path(mine.Id), path(mine.Id)+"/test"); r.code != http.StatusForbidden {
				t.Fatalf("viewer test: %d", r.code)
			}
			if r := viewer.post(path(mine.Id), path(mine.Id)+"/delete"); r.code != http.StatusForbidden {
				t.Fatalf("viewer delete: %d", r.code)
			}
			if n := len(acme.deliveries(t, mine.Id)); n != 0 {
				t.Fatalf("a viewer's test queued %d deliveries", n)
			}

			member := acme.client(t)
			member.login(acme.member)
			if r := member.do("GET", "/console/webhooks", nil); r.code != 200 || strings.Contains(r.body, "/admin") || !strings.Contains(r.body, "/member") {
				t.Fatalf("member list: %d", r.code)
			}
			if r := member.do("GET", path(mine.Id), nil); r.code != http.StatusNotFound {
				t.Fatalf("member, another's registration: %d", r.code)
			}
			if r := member.post(path(theirs.Id), path(mine.Id)+"/test"); r.code != http.StatusNotFound {
				t.Fatalf("member, test another's registration: %d", r.code)
			}
			if r := member.post(path(theirs.Id), path(theirs.Id)+"/test"); r.code != http.StatusSeeOther || r.location != path(theirs.Id) {
				t.Fatalf("member, test own: %d %q", r.code, r.location)
			}
			if n := len(acme.deliveries(t, theirs.Id)); n != 1 {
				t.Fatalf("member's test: %d deliveries", n)
			}

			admin := acme.client(t)
			admin.login(acme.admin)
			// The other tenant has this id; here it does not exist.
			if foreign <= theirs.Id {
				t.Fatalf("fixture: foreign id %d", foreign)
			}
			for _, p := range []string{path(foreign), path(foreign) + "/deliveries/00000000-0000-0000-0000-000000000000/redeliver", path(0), "/console/webhooks/x"} {
				if r := admin.do("GET", p, nil); r.code != http.StatusNotFound && r.code != http.StatusMethodNotAllowed {
					t.Errorf("GET %s: %d", p, r.code)
				}
			}
			if r := admin.post(path(mine.Id), path(foreign)+"/delete"); r.code != http.StatusNotFound {
				t.Fatalf("admin, another tenant's id: %d", r.code)
			}
			other.Do("GET", fmt.Sprintf("/api/1.0/webhooks/%d", foreign), other.admin.token, nil).Status(t, http.StatusOK)
			// No CSRF token: refused, nothing deleted.
			if r := admin.do("POST", path(mine.Id)+"/delete", url.Values{}); r.code != http.StatusForbidden {
				t.Fatalf("no csrf: %d", r.code)
			}
			acme.Do("GET", fmt.Sprintf("/api/1.0/webhooks/%d", mine.Id), acme.admin.token, nil).Status(t, http.StatusOK)
			// An admin may change the member's registration.
			if r := admin.confirm(path(theirs.Id), path(theirs.Id)+"/disable"); r.code != http.StatusSeeOther {
				t.Fatalf("admin disable: %d", r.code)
			}
			// Refusals from the domain are shown on the page: an inactive
			// registration cannot be tested.
			if r := admin.post(path(theirs.Id), path(theirs.Id)+"/test"); r.code != http.StatusBadRequest || !strings.Contains(r.body, "inactive") {
				t.Fatalf("test inactive: %d", r.code)
			}
		})
	}
}
