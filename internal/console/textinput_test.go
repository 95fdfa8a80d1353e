package console_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/testdb"
)

// Every console page's query parameters (every GET route of the console is
// in pages) obey the rule every text input
// obeys, as the API's do: NUL or invalid UTF-8 in any of them is a 400
// naming the field, on both dialects (PostgreSQL refuses both in text
// where SQLite stores them), never a 500; and so is a form field.
func TestConsoleRefusesBadTextInParameters(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme := newOrg(t, env, "acme")
			wh := acme.webhook(t, acme.admin, "https://127.0.0.1:9/hook")
			admin := acme.client(t)
			admin.login(acme.admin)
			hook := "/console/webhooks/" + strconv.FormatInt(wh.Id, 10)

			pages := map[string][]string{
				"/console/audit":        {"action", "target_type", "target_id", "actor_user_id", "created_after", "created_before", "page"},
				"/console/acts":         {"uuid", "q", "status", "template", "client", "page"},
				"/console/users":        {"page"},
				"/console/webhooks":     {"page"},
				"/console/webhooks/new": {"event"},
				hook:                    {"status", "event", "from", "to", "after"},
				hook + "/secret":        {"x"},
				// The pages of one object: any parameter is checked before
				// the object is looked up.
				"/console/acts/00000000-0000-4000-8000-000000000000": {"x"},
				hook + "/deliveries/1":                               {"x"},
			}
			for path, params := range pages {
				for _, p := range params {
					for _, bad := range []string{"a\x00b", "\xff\xfe"} {
						r := admin.do("GET", path+"?"+url.Values{p: {bad}}.Encode(), nil)
						if r.code != http.StatusBadRequest || !strings.Contains(r.body, "&#34;"+p+"&#34;") || !strings.Contains(r.body, "without NUL characters") {
							t.Errorf("GET %s?%s=%q: %d\n%.600s", path, p, bad, r.code, r.body)
						}
					}
				}
			}
			// A form field too: the new user's name.
			page := admin.do("GET", "/console/users", nil)
			r := admin.do("POST", "/console/users", url.Values{"csrf_token": {csrf(t, page.body)}, "email": {"n@acme.example.com"}, "name": {"a\x00b"}, "role": {"member"}})
			if r.code != http.StatusBadRequest || !strings.Contains(r.body, "&#34;name&#34;") {
				t.Errorf("POST /console/users with a NUL name: %d\n%.600s", r.code, r.body)
			}
		})
	}
}
