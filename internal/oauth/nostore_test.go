package oauth_test

import (
	"html"
	"net/http"
	"net/url"
	"testing"
)

// The developer pages that show an app's secret once, after the app is
// created and after its secret is rotated, answer Cache-Control: no-store,
// so that no browser or proxy keeps a copy of the secret.
func TestAppSecretPagesAreNotCached(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "admin")
		c := o.browser(t)
		o.login(t, c)
		shown := func(what string, p page) string {
			t.Helper()
			if p.Code != http.StatusSeeOther || p.Location != "/developer/my-apps" {
				t.Fatalf("%s: %d %q", what, p.Code, p.Location)
			}
			p = do(t, c, "GET", o.Server.URL+p.Location, nil)
			m := secretRE.FindStringSubmatch(p.Body)
			if p.Code != http.StatusOK || m == nil {
				t.Fatalf("%s: %d, no secret shown", what, p.Code)
			}
			if got := p.Header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("%s: the page that shows the secret says Cache-Control %q, want no-store", what, got)
			}
			return html.UnescapeString(clientIDRE.FindStringSubmatch(p.Body)[1])
		}
		csrf := csrfOf(t, do(t, c, "GET", o.Server.URL+"/developer/my-apps", nil).Body)
		id := shown("create an app", do(t, c, "POST", o.Server.URL+"/developer/my-apps", url.Values{"csrf_token": {csrf},
			"name": {"Ledger Sync"}, "redirect_uris": {"https://ledger.example.com/cb"}, "scopes": {"acts:read"}}))
		shown("rotate its secret", do(t, c, "POST", o.Server.URL+"/developer/my-apps/"+id+"/rotate", url.Values{"csrf_token": {csrf}, "overlap": {"24h"}}))
	})
}
