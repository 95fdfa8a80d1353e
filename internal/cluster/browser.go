package cluster

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// The sign-in page's CSRF field and the consent form's hidden fields.
var (
	csrfRE   = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
	hiddenRE = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
)

// Browse sends one request as a browser would (cookies kept, redirects not
// followed) and returns the status, body and headers. The harness and the
// benchmark (bench) drive the sign-in pages through it.
type Browse func(method, path string, form url.Values) (int, string, http.Header, error)

// SignIn signs email in through /login.
func SignIn(do Browse, email, password string) error {
	code, body, _, err := do("GET", "/login", nil)
	m := csrfRE.FindStringSubmatch(body)
	if err != nil || code != 200 || m == nil {
		return fmt.Errorf("login page: %d %v", code, err)
	}
	code, body, _, err = do("POST", "/login", url.Values{"csrf_token": {html.UnescapeString(m[1])},
		"email": {email}, "password": {password}, "next": {"/account/apps"}})
	if err != nil || code != http.StatusSeeOther {
		return fmt.Errorf("login: %d %v %.300s", code, err, body)
	}
	return nil
}

// CodeFlow runs, for a signed-in browser, the authorization request (with
// scope, when not empty), allows the consent page when it is shown, and
// exchanges the code for tokens.
func CodeFlow(do Browse, clientID, secret, redirect, scope, state string) (access, refresh string, err error) {
	params := url.Values{"client_id": {clientID}, "redirect_uri": {redirect}, "response_type": {"code"}, "state": {state}}
	if scope != "" {
		params.Set("scope", scope)
	}
	code, body, hdr, err := do("GET", "/oauth/authorize?"+params.Encode(), nil)
	if err != nil {
		return "", "", err
	}
	if code == 200 {
		form := url.Values{}
		if i := strings.Index(body, `action="/oauth/authorize"`); i >= 0 {
			for _, m := range hiddenRE.FindAllStringSubmatch(body[i:], -1) {
				form.Set(html.UnescapeString(m[1]), html.UnescapeString(m[2]))
			}
		}
		form.Set("decision", "allow")
		if code, body, hdr, err = do("POST", "/oauth/authorize", form); err != nil {
			return "", "", err
		}
	}
	if code != http.StatusFound {
		return "", "", fmt.Errorf("consent: %d %.300s", code, body)
	}
	loc, _ := url.Parse(hdr.Get("Location"))
	authCode := loc.Query().Get("code")
	if authCode == "" {
		return "", "", fmt.Errorf("no code in %s", hdr.Get("Location"))
	}
	code, body, _, err = do("POST", "/api/oauth/token", url.Values{"grant_type": {"authorization_code"},
		"client_id": {clientID}, "client_secret": {secret}, "redirect_uri": {redirect}, "code": {authCode}})
	if err != nil || code != 200 {
		return "", "", fmt.Errorf("token: %d %v %.300s", code, err, body)
	}
	var tok struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	if err := json.Unmarshal([]byte(body), &tok); err != nil || tok.AccessToken == "" {
		return "", "", fmt.Errorf("token response: %.300s", body)
	}
	return tok.AccessToken, tok.RefreshToken, nil
}
