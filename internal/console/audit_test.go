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

// TestAuditPage: an admin's console action is recorded with the admin as
// actor (the console passes its signed-in user to the stores), the audit
// page lists it with the API's filters, and a member gets 403; another
// tenant's records never show.
func TestAuditPage(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme, other := newOrg(t, env, "acme"), newOrg(t, env, "other")
			m := acme.client(t)
			m.login(acme.member)
			if r := m.do("GET", "/console/audit", nil); r.code != http.StatusForbidden {
				t.Fatalf("member: %d", r.code)
			}
			o := other.client(t)
			o.login(other.admin)

			admin := acme.client(t)
			admin.login(acme.admin)
			page := admin.do("GET", "/console/users", nil)
			tok := csrf(t, page.body)
			if r := admin.do("POST", fmt.Sprintf("/console/users/%d/role", acme.viewer.id), url.Values{"csrf_token": {tok}, "role": {"member"}}); r.code != http.StatusSeeOther && r.code != http.StatusFound && r.code != http.StatusOK {
				t.Fatalf("change role: %d", r.code)
			}
			r := admin.do("GET", "/console/audit?"+url.Values{"action": {"user.role_changed"}}.Encode(), nil)
			if r.code != 200 || strings.Count(r.body, "<code>user.role_changed</code>") != 1 ||
				!strings.Contains(r.body, fmt.Sprintf("user %d", acme.viewer.id)) || !strings.Contains(r.body, fmt.Sprintf("user %d<", acme.admin.id)) {
				t.Fatalf("role changes: %d\n%s", r.code, r.body)
			}
			r = admin.do("GET", "/console/audit?action=auth.sign_in", nil)
			if r.code != 200 || strings.Count(r.body, "<code>auth.sign_in</code>") != 2 { // the member's and the admin's, not the other tenant's
				t.Fatalf("sign-ins: %d\n%s", r.code, r.body)
			}
			// A bad filter is a sentence naming it as the form labels it.
			r = admin.do("GET", "/console/audit?created_after=not-a-time&actor_user_id=x", nil)
			if r.code != http.StatusBadRequest || !strings.Contains(r.body, "From must be a date and time.") ||
				!strings.Contains(r.body, "The actor must be a user id.") || strings.Contains(r.body, "Actor_user_id") {
				t.Fatalf("a bad filter: %d\n%s", r.code, r.body)
			}
		})
	}
}
