package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/testdb"
)

// The sealed cookie that carries a revealed secret to the page after the
// form opens once: replayed afterwards, in the same session or in a new
// session of the same user, it shows nothing.
func TestRevealedSecretFlashIsSingleUse(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme := newOrg(t, env, "acme")
			wh := acme.webhook(t, acme.admin, "https://127.0.0.1:9/admin")
			secret := fmt.Sprintf("/console/webhooks/%d/secret", wh.Id)
			admin := acme.client(t)
			admin.login(acme.admin)
			form := admin.do("GET", secret, nil)
			r := admin.do("POST", secret, url.Values{"csrf_token": {csrf(t, form.body)}, "password": {password}})
			if r.code != http.StatusSeeOther {
				t.Fatalf("reveal: %d", r.code)
			}
			var flash *http.Cookie
			for _, ck := range (&http.Response{Header: r.header}).Cookies() {
				if ck.Name == "finsvc_flash" && ck.Value != "" {
					flash = ck
				}
			}
			if flash == nil {
				t.Fatalf("no flash cookie: %v", r.header)
			}
			if got := revealed(admin.do("GET", secret, nil).body); got["current"] != wh.Secret {
				t.Fatalf("the first GET after the reveal shows %v", got)
			}
			replay := func(c *client) map[string]string {
				t.Helper()
				u, _ := url.Parse(acme.Server.URL + secret)
				c.hc.Jar.SetCookies(u, []*http.Cookie{{Name: flash.Name, Value: flash.Value, Path: flash.Path}})
				return revealed(c.do("GET", secret, nil).body)
			}
			if got := replay(admin); len(got) != 0 {
				t.Fatalf("the flash replayed in the same session shows %v", got)
			}
			again := acme.client(t)
			again.login(acme.admin)
			if got := replay(again); len(got) != 0 {
				t.Fatalf("the flash replayed in a new session shows %v", got)
			}

			// A fresh reveal's cookie, taken first by another session of the
			// same user: nothing there, and the session that asked still
			// gets it.
			form = admin.do("GET", secret, nil)
			r = admin.do("POST", secret, url.Values{"csrf_token": {csrf(t, form.body)}, "password": {password}})
			flash = nil
			for _, ck := range (&http.Response{Header: r.header}).Cookies() {
				if ck.Name == "finsvc_flash" && ck.Value != "" {
					flash = ck
				}
			}
			if r.code != http.StatusSeeOther || flash == nil {
				t.Fatalf("second reveal: %d", r.code)
			}
			if got := replay(again); len(got) != 0 {
				t.Fatalf("another session took the flash: %v", got)
			}
			if got := revealed(admin.do("GET", secret, nil).body); got["current"] != wh.Secret {
				t.Fatalf("the session that revealed gets %v", got)
			}
		})
	}
}
