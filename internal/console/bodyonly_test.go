package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/users"
)

// The console reads a form's fields from the POST body only: a password
// in the reveal form's URL reveals nothing, a confirmation's token in the
// URL confirms nothing, and a new user's password in the URL is not the one
// the user gets.
func TestConsoleFormsReadTheBodyOnly(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme := newOrg(t, env, "acme")
			wh := acme.webhook(t, acme.admin, "https://127.0.0.1:9/admin")
			admin := acme.client(t)
			admin.login(acme.admin)
			secret := fmt.Sprintf("/console/webhooks/%d/secret", wh.Id)
			form := admin.do("GET", secret, nil)
			r := admin.do("POST", secret+"?"+url.Values{"password": {password}}.Encode(), url.Values{"csrf_token": {csrf(t, form.body)}})
			if r.code == http.StatusSeeOther || len(revealed(r.body)) != 0 {
				t.Fatalf("a reveal with the password in the URL: %d %q", r.code, r.location)
			}
			if r := admin.do("GET", secret, nil); len(revealed(r.body)) != 0 {
				t.Fatal("the secret shown after a password in the URL")
			}
			for _, row := range reveals(t, acme) {
				if row.Outcome == audit.Success {
					t.Fatalf("a reveal recorded as a success: %+v", row)
				}
			}

			// A confirmation's token in the URL confirms nothing.
			hook := fmt.Sprintf("/console/webhooks/%d", wh.Id)
			_, tok := admin.ask(hook, hook+"/delete")
			r = admin.do("POST", hook+"/delete?"+url.Values{"csrf_token": {tok}}.Encode(), url.Values{})
			if r.code == http.StatusSeeOther {
				t.Fatalf("a deletion confirmed by a token in the URL: %d %q", r.code, r.location)
			}
			acme.Do("GET", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id), acme.admin.token, nil).Status(t, http.StatusOK)

			page := admin.do("GET", "/console/users", nil)
			const chosen = "cantaloupe in a red wheelbarrow"
			r = admin.do("POST", "/console/users?"+url.Values{"password": {chosen}}.Encode(),
				url.Values{"csrf_token": {csrf(t, page.body)}, "email": {"new@acme.example.com"}, "name": {"New"}, "role": {"member"}})
			if r.code != http.StatusSeeOther {
				t.Fatalf("create a user: %d", r.code)
			}
			if _, err := users.NewStore(env.DB, users.WithHashParams(apitest.HashParams)).Authenticate(acme.Ctx, "new@acme.example.com", chosen); err == nil {
				t.Fatal("the new user got the password from the URL")
			}
		})
	}
}
