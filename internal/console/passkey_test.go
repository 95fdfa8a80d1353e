package console_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/mfa/passkeytest"
)

// passkeyCSRFRE is the CSRF token of a page's passkey form.
var passkeyCSRFRE = regexp.MustCompile(`(?s)data-passkey="(?:create|get)"[^>]*>\s*<input type="hidden" name="csrf_token" value="([^"]+)">`)

func passkeyCSRF(t *testing.T, body string) string {
	t.Helper()
	m := passkeyCSRFRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no passkey form on the page: %s", body)
	}
	return strings.ReplaceAll(m[1], "&#43;", "+")
}

// begin posts a passkey form's token to its begin path and returns the
// options (failing unless they came as JSON).
func (c *client) begin(t *testing.T, path, token string) []byte {
	t.Helper()
	r := c.do("POST", path, url.Values{"csrf_token": {token}})
	if r.code != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") || !json.Valid([]byte(r.body)) {
		t.Fatalf("POST %s: %d %s %s", path, r.code, r.header.Get("Content-Type"), r.body)
	}
	return []byte(r.body)
}

// TestPasskeyPages: over HTTP, with a software passkey, an admin adds a
// passkey on the account page (the session counts it as a factor given:
// a new session id); after the password the factor page offers the
// passkey (and no code field: the user has no app); a refused answer is
// a 401 page and the half session stays half; a good one signs in on a
// new session id with hwk among the factors; the step-up takes a
// passkey; the begin paths refuse without the form's token or the right
// session stage. No audit record holds the credential id.
func TestPasskeyPages(t *testing.T) {
	env := newEnv(t)
	o := newOrg(t, env, "acme")
	origin, rpID := "http://"+o.Host, o.Host
	key := passkeytest.New(t)
	c := o.client(t)
	c.login(o.admin)

	acct := c.do("GET", "/console/account", nil)
	if !strings.Contains(acct.body, `id="no-passkeys"`) || !strings.Contains(acct.body, `src="/assets/passkey.js"`) ||
		!strings.Contains(acct.header.Get("Content-Security-Policy"), "connect-src 'self'") {
		t.Fatalf("account page: %v %s", acct.header, acct.body)
	}
	tok := passkeyCSRF(t, acct.body)
	if r := c.do("POST", "/console/account/passkeys/begin", url.Values{"csrf_token": {"forged"}}); r.code != http.StatusForbidden {
		t.Fatalf("begin with a forged token: %d", r.code)
	}
	opts := c.begin(t, "/console/account/passkeys/begin", tok)
	if !strings.Contains(string(opts), `"id":"`+rpID+`"`) {
		t.Fatalf("the RP id is not the tenant's host: %s", opts)
	}
	before := c.sessionCookie()
	// No name: the field says so, and the ceremony is not spent.
	r := c.do("POST", "/console/account/passkeys", url.Values{"csrf_token": {tok}, "name": {" "}, "credential": {string(key.Create(t, opts, origin, rpID))}})
	if r.code != http.StatusBadRequest || !strings.Contains(r.body, `id="passkey-name-error"`) {
		t.Fatalf("a passkey without a name: %d %s", r.code, r.body)
	}
	r = c.do("POST", "/console/account/passkeys", url.Values{"csrf_token": {tok}, "name": {"Laptop"}, "credential": {string(key.Create(t, opts, origin, rpID))}})
	if r.code != http.StatusSeeOther {
		t.Fatalf("adding a passkey: %d %s", r.code, r.body)
	}
	if c.sessionCookie() == before {
		t.Fatal("adding a passkey kept the session id")
	}
	acct = c.do("GET", "/console/account", nil)
	if !strings.Contains(acct.body, `&#34;Laptop&#34; is added`) || !strings.Contains(acct.body, `id="passkey-1"`) || !strings.Contains(acct.body, `data-amr="hwk"`) {
		t.Fatalf("account page after adding: %s", acct.body)
	}
	c.logout("/console/account")

	if r := c.password(o.admin, "/console/acts"); r.code != http.StatusSeeOther || !strings.HasPrefix(r.location, "/login/factor") {
		t.Fatalf("password of a passkey user: %d %s", r.code, r.location)
	}
	half := c.sessionCookie()
	page := c.do("GET", "/login/factor?next=%2Fconsole%2Facts", nil)
	if page.code != http.StatusOK || !strings.Contains(page.body, `id="use-passkey"`) || strings.Contains(page.body, `id="code"`) {
		t.Fatalf("factor page of a passkey user: %d %s", page.code, page.body)
	}
	ftok := passkeyCSRF(t, page.body)
	opts = c.begin(t, "/login/factor/passkey/begin", ftok)
	r = c.do("POST", "/login/factor/passkey", url.Values{"csrf_token": {ftok}, "next": {"/console/acts"}, "credential": {string(key.Get(t, opts, "http://evil.localhost", rpID))}})
	if r.code != http.StatusUnauthorized || !strings.Contains(r.body, "The passkey was not accepted") {
		t.Fatalf("an answer from another origin: %d %s", r.code, r.body)
	}
	if got := c.do("GET", "/console/acts", nil); got.code != http.StatusFound || !strings.HasPrefix(got.location, "/login/factor") {
		t.Fatalf("after a refused passkey the session is not half: %d %s", got.code, got.location)
	}
	opts = c.begin(t, "/login/factor/passkey/begin", ftok)
	r = c.do("POST", "/login/factor/passkey", url.Values{"csrf_token": {ftok}, "next": {"/console/acts"}, "credential": {string(key.Get(t, opts, origin, rpID))}})
	if r.code != http.StatusSeeOther || r.location != "/console/acts" {
		t.Fatalf("a good passkey: %d %s %s", r.code, r.location, r.body)
	}
	if s := c.sessionCookie(); s == half || s == "" {
		t.Fatal("the passkey kept the half session's id")
	}
	if got := c.do("GET", "/console/acts", nil); got.code != http.StatusOK {
		t.Fatalf("signed in with the passkey: %d %s", got.code, got.location)
	}
	// The factor page's begin is for a half session only.
	if r := c.do("POST", "/login/factor/passkey/begin", url.Values{"csrf_token": {ftok}}); r.code != http.StatusUnauthorized {
		t.Fatalf("the factor page's begin when signed in: %d", r.code)
	}

	// Step-up with the passkey.
	step := c.do("GET", "/login/confirm?next=%2Fconsole%2Fusers", nil)
	if step.code != http.StatusOK || !strings.Contains(step.body, `action="/login/confirm/passkey"`) {
		t.Fatalf("step-up page: %d %s", step.code, step.body)
	}
	stok := passkeyCSRF(t, step.body)
	opts = c.begin(t, "/login/confirm/passkey/begin", stok)
	r = c.do("POST", "/login/confirm/passkey", url.Values{"csrf_token": {stok}, "next": {"/console/users"}, "credential": {string(key.Get(t, opts, origin, rpID))}})
	if r.code != http.StatusSeeOther || r.location != "/console/users" {
		t.Fatalf("step-up with the passkey: %d %s %s", r.code, r.location, r.body)
	}

	var all []audit.Row
	env.DB.Order("id").Find(&all)
	dump, _ := json.Marshal(all)
	for _, enc := range credIDEncodings(key.ID) {
		if strings.Contains(string(dump), enc) {
			t.Fatalf("an audit record holds the credential id (%s)", enc)
		}
	}
	var used, refused int64
	env.DB.Model(&audit.Row{}).Where("action = ? AND outcome = ?", audit.MFAPasskeyUsed, audit.Success).Count(&used)
	env.DB.Model(&audit.Row{}).Where("action = ? AND outcome = ?", audit.MFAPasskeyUsed, audit.Failure).Count(&refused)
	if used != 2 || refused != 1 {
		t.Fatalf("passkey uses audited: %d, %d refused; want 2, 1", used, refused)
	}
}

// TestPasskeyThrottled: refused passkeys count against the sign-in's
// limits (5 per email): the sixth answer, even a good one, is refused
// with 429 and Retry-After, and the session stays half.
func TestPasskeyThrottled(t *testing.T) {
	env := newEnv(t)
	o := newOrg(t, env, "acme")
	origin, rpID := "http://"+o.Host, o.Host
	key := passkeytest.New(t)
	c := o.client(t)
	c.login(o.admin)
	tok := passkeyCSRF(t, c.do("GET", "/console/account", nil).body)
	opts := c.begin(t, "/console/account/passkeys/begin", tok)
	if r := c.do("POST", "/console/account/passkeys", url.Values{"csrf_token": {tok}, "name": {"Key"}, "credential": {string(key.Create(t, opts, origin, rpID))}}); r.code != http.StatusSeeOther {
		t.Fatalf("adding a passkey: %d", r.code)
	}
	c.logout("/console/account")
	c.password(o.admin, "/console/acts")
	ftok := passkeyCSRF(t, c.do("GET", "/login/factor", nil).body)
	other := passkeytest.New(t) // not registered
	for i := range 5 {
		opts := c.begin(t, "/login/factor/passkey/begin", ftok)
		if r := c.do("POST", "/login/factor/passkey", url.Values{"csrf_token": {ftok}, "credential": {string(other.Get(t, opts, origin, rpID))}}); r.code != http.StatusUnauthorized {
			t.Fatalf("refused answer %d: %d", i+1, r.code)
		}
	}
	opts = c.begin(t, "/login/factor/passkey/begin", ftok)
	r := c.do("POST", "/login/factor/passkey", url.Values{"csrf_token": {ftok}, "credential": {string(key.Get(t, opts, origin, rpID))}})
	if r.code != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
		t.Fatalf("the sixth answer: %d %v", r.code, r.header)
	}
	if got := c.do("GET", "/console/acts", nil); got.code != http.StatusFound || !strings.HasPrefix(got.location, "/login/factor") {
		t.Fatalf("after the throttle the session is not half: %d %s", got.code, got.location)
	}
}

// TestPasskeyEnrolment: a member the policy holds at enrolment adds a
// passkey instead of an app, and is then signed in (every page reachable,
// hwk among the factors).
func TestPasskeyEnrolment(t *testing.T) {
	env := newEnv(t)
	o := newOrg(t, env, "acme")
	a := o.client(t)
	a.login(o.admin)
	page := a.do("GET", "/console/security", nil)
	if r := a.do("POST", "/console/security", url.Values{"csrf_token": {csrf(t, page.body)}, "policy": {"everyone"}}); r.code != http.StatusSeeOther {
		t.Fatalf("set the policy: %d", r.code)
	}
	m := o.client(t)
	if r := m.password(o.member, "/console/acts"); r.code != http.StatusSeeOther || !strings.HasPrefix(r.location, "/console/account") {
		t.Fatalf("a covered member's password: %d %s", r.code, r.location)
	}
	acct := m.do("GET", "/console/account?next=%2Fconsole%2Facts", nil)
	if !strings.Contains(acct.body, `id="enrol-required"`) {
		t.Fatalf("enrolment page: %s", acct.body)
	}
	tok := passkeyCSRF(t, acct.body)
	key := passkeytest.New(t)
	opts := m.begin(t, "/console/account/passkeys/begin", tok)
	r := m.do("POST", "/console/account/passkeys", url.Values{"csrf_token": {tok}, "name": {"Phone"}, "next": {"/console/acts"},
		"credential": {string(key.Create(t, opts, "http://"+o.Host, o.Host))}})
	if r.code != http.StatusSeeOther || !strings.HasPrefix(r.location, "/console/account") {
		t.Fatalf("adding a passkey at enrolment: %d %s %s", r.code, r.location, r.body)
	}
	if got := m.do("GET", "/console/acts", nil); got.code != http.StatusOK {
		t.Fatalf("after enrolling a passkey: %d %s", got.code, got.location)
	}
	if acct := m.do("GET", "/console/account", nil); !strings.Contains(acct.body, `data-amr="hwk"`) || strings.Contains(acct.body, `id="enrol-required"`) {
		t.Fatalf("account page after enrolling a passkey: %s", acct.body)
	}
}
