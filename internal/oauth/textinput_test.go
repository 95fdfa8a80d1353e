package oauth_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/textinput"
)

// spoilers are the two ways a text input can break the rule: NUL and a
// byte that is not UTF-8 (both sent percent-encoded in forms).
var spoilers = map[string]string{"NUL": "\x00", "invalid UTF-8": "\xff"}

// TestTextInputForms sends NUL and invalid UTF-8 in every form and OAuth
// parameter that reaches the database: PostgreSQL used to answer 500
// (SQLSTATE 22021) where SQLite went on. Both now refuse it the same way
// and change nothing.
func TestTextInputForms(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "admin")
		_, refresh := o.tokens(t)
		for name, bad := range spoilers {
			t.Run(name, func(t *testing.T) {
				// Login: the email is refused before the user lookup.
				c := o.browser(t)
				p := do(t, c, "GET", o.Server.URL+"/login", nil)
				for _, field := range []string{"email", "password"} {
					form := url.Values{"csrf_token": {csrfOf(t, p.Body)}, "email": {o.email}, "password": {testPassword}}
					form.Set(field, form.Get(field)+bad)
					res := do(t, c, "POST", o.Server.URL+"/login", form)
					if res.Code != http.StatusBadRequest || !strings.Contains(res.Body, textinput.Message) {
						t.Fatalf("login with bad %s: %d %s", field, res.Code, res.Body)
					}
				}

				// Developer apps: the name and the redirect URIs.
				o.login(t, c)
				p = do(t, c, "GET", o.Server.URL+"/developer/my-apps", nil)
				csrf := csrfOf(t, p.Body)
				for _, field := range []string{"name", "redirect_uris"} {
					form := url.Values{"csrf_token": {csrf}, "name": {"Ledger"}, "redirect_uris": {"https://ledger.example.com/cb"}}
					form.Set(field, form.Get(field)+bad)
					res := do(t, c, "POST", o.Server.URL+"/developer/my-apps", form)
					label := map[string]string{"name": "The name ", "redirect_uris": "&#34;https://ledger.example.com/cb"}[field]
					if res.Code != http.StatusBadRequest || !strings.Contains(res.Body, label) || !strings.Contains(res.Body, textinput.Message) {
						t.Fatalf("app with bad %s: %d %s", field, res.Code, res.Body)
					}
				}
				var apps int64
				s.DB.Table("oauth_clients").Where("tenant_id = ?", o.Tenant.ID).Count(&apps)
				if apps != 1 {
					t.Fatalf("%d apps after refused forms, want 1", apps)
				}
				// App ids in paths: nothing has such an id.
				esc := url.PathEscape(o.clientID + bad)
				if res := do(t, c, "POST", o.Server.URL+"/developer/my-apps/"+esc+"/rotate", url.Values{"csrf_token": {csrf}}); res.Code != http.StatusNotFound {
					t.Fatalf("rotate: %d", res.Code)
				}
				if res := do(t, c, "POST", o.Server.URL+"/developer/my-apps/"+esc+"/delete", url.Values{"csrf_token": {csrf}}); res.Code != http.StatusNotFound {
					t.Fatalf("delete: %d", res.Code)
				}
				p = do(t, c, "GET", o.Server.URL+"/account/apps", nil)
				if res := do(t, c, "POST", o.Server.URL+"/account/apps/"+esc+"/revoke", url.Values{"csrf_token": {csrfOf(t, p.Body)}}); res.Code != http.StatusSeeOther {
					t.Fatalf("revoke: %d", res.Code)
				}

				// Authorization: an error page, never a redirect.
				for _, k := range []string{"client_id", "redirect_uri", "state", "scope"} {
					params := o.authParams("state-12345678")
					params.Set(k, params.Get(k)+bad)
					res := do(t, c, "GET", o.Server.URL+"/oauth/authorize?"+params.Encode(), nil)
					if res.Code != http.StatusBadRequest || res.Location != "" || !strings.Contains(res.Body, textinput.Message) {
						t.Fatalf("authorize with bad %s: %d %q %s", k, res.Code, res.Location, res.Body)
					}
					params.Set("decision", "allow")
					res = do(t, c, "POST", o.Server.URL+"/oauth/authorize", params)
					if res.Code != http.StatusBadRequest || res.Location != "" || !strings.Contains(res.Body, textinput.Message) {
						t.Fatalf("consent with bad %s: %d %q %s", k, res.Code, res.Location, res.Body)
					}
				}

				// Token and revocation endpoints: invalid_request, as a
				// form, as JSON and with Basic credentials.
				for _, k := range []string{"client_id", "client_secret", "refresh_token"} {
					for _, st := range []reqStyle{{}, {json: true}, {basic: true}} {
						if st.json && bad == "\xff" {
							continue // json.Marshal sends U+FFFD: see the raw body below
						}
						form := o.refreshGrant(refresh)
						form.Set(k, form.Get(k)+bad)
						expectOAuthError(t, o.token(t, form, st), http.StatusBadRequest, "invalid_request")
						rv := url.Values{"client_id": {o.clientID}, "client_secret": {o.secret}, "token": {refresh}}
						if k == "refresh_token" {
							rv.Set("token", refresh+bad)
						} else {
							rv.Set(k, rv.Get(k)+bad)
						}
						expectOAuthError(t, o.post(t, "/api/oauth/revoke", rv, st), http.StatusBadRequest, "invalid_request")
					}
				}
				// Raw invalid UTF-8 in a JSON body (json.Marshal would
				// have replaced it): refused too, not read as U+FFFD.
				body, _ := json.Marshal(map[string]string{"grant_type": "refresh_token", "client_id": o.clientID, "client_secret": o.secret, "refresh_token": refresh})
				body = bytes.Replace(body, []byte(o.clientID), []byte(o.clientID+bad), 1)
				req, _ := http.NewRequest("POST", o.Server.URL+"/api/oauth/token", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := o.HTTPClient().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "invalid_request") {
					t.Fatalf("raw JSON: %d %s", resp.StatusCode, b)
				}
			})
		}
		// The refresh token was never consumed by the refused requests.
		if r := o.token(t, o.refreshGrant(refresh), reqStyle{}); r.Code != http.StatusOK {
			t.Fatalf("refresh after refused requests: %d %v", r.Code, r.Body)
		}
	})
}
