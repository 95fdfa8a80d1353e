package oauth_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/mfa"
	"github.com/finsvc/finsvc/internal/mfa/passkeytest"
	"github.com/finsvc/finsvc/internal/oauth"
)

// enrolTOTP gives the org's user an authenticator through the store and
// returns its secret (the code that confirmed it is spent).
func (o *org) enrolTOTP(t testing.TB) string {
	t.Helper()
	m := o.s.App.MFA()
	e, err := m.BeginTOTP(o.Ctx, o.userID, o.email)
	if err != nil {
		t.Fatal(err)
	}
	code, _ := totp.GenerateCode(e.Key.Secret(), time.Now())
	if _, err := m.ConfirmTOTP(o.Ctx, o.userID, code); err != nil {
		t.Fatal(err)
	}
	return e.Key.Secret()
}

// TestAuthorizationCodeFlowWithSecondFactor: the authorization-code flow
// of a user with a second factor gets no code on the password alone: the
// authorization endpoint, and a consent posted anyway, lead to the factor
// page; after a good code the flow goes on to the consent and its code.
func TestAuthorizationCodeFlowWithSecondFactor(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "admin")
		secret := o.enrolTOTP(t)
		c := o.browser(t)
		params := o.authParams("xyz-state-123")
		authz := "/oauth/authorize?" + params.Encode()
		p := do(t, c, "GET", o.Server.URL+authz, nil)
		lp := do(t, c, "GET", o.Server.URL+p.Location, nil)
		p = do(t, c, "POST", o.Server.URL+"/login", url.Values{
			"csrf_token": {csrfOf(t, lp.Body)}, "email": {o.email}, "password": {testPassword}, "next": {authz},
		})
		if p.Code != http.StatusSeeOther || !strings.HasPrefix(p.Location, "/login/factor?") {
			t.Fatalf("password: %d %q", p.Code, p.Location)
		}
		factorPage := p.Location
		// The password alone: no consent page, no code.
		p = do(t, c, "GET", o.Server.URL+authz, nil)
		if p.Code != http.StatusFound || !strings.HasPrefix(p.Location, "/login/factor?") {
			t.Fatalf("authorize on the password alone: %d %q", p.Code, p.Location)
		}
		form := cloneValues(params)
		form.Set("decision", "allow")
		form.Set("csrf_token", "forged")
		p = do(t, c, "POST", o.Server.URL+"/oauth/authorize", form)
		if strings.Contains(p.Location, "code=") || p.Code == http.StatusOK {
			t.Fatalf("consent on the password alone: %d %q", p.Code, p.Location)
		}
		// A wrong code, then a good one: on to the consent.
		fp := do(t, c, "GET", o.Server.URL+factorPage, nil)
		if fp.Code != 200 || !strings.Contains(fp.Body, `id="factor-form"`) {
			t.Fatalf("factor page: %d %s", fp.Code, fp.Body)
		}
		next, _ := url.Parse(factorPage)
		p = do(t, c, "POST", o.Server.URL+"/login/factor", url.Values{"csrf_token": {csrfOf(t, fp.Body)}, "code": {"12345"}, "next": {next.Query().Get("next")}})
		if p.Code != http.StatusUnauthorized {
			t.Fatalf("a wrong code: %d", p.Code)
		}
		good, _ := totp.GenerateCode(secret, time.Now().Add(mfa.Period*time.Second))
		p = do(t, c, "POST", o.Server.URL+"/login/factor", url.Values{"csrf_token": {csrfOf(t, fp.Body)}, "code": {good}, "next": {next.Query().Get("next")}})
		if p.Code != http.StatusSeeOther || p.Location != authz {
			t.Fatalf("a good code: %d %q", p.Code, p.Location)
		}
		p = do(t, c, "GET", o.Server.URL+p.Location, nil)
		if p.Code != 200 || !strings.Contains(p.Body, "Test App") {
			t.Fatalf("consent page: %d %s", p.Code, p.Body)
		}
		form = hiddenFields(p.Body)
		form.Set("decision", "allow")
		p = do(t, c, "POST", o.Server.URL+"/oauth/authorize", form)
		loc, _ := url.Parse(p.Location)
		if p.Code != http.StatusFound || loc.Query().Get("code") == "" {
			t.Fatalf("allow: %d %q", p.Code, p.Location)
		}
		if r := o.token(t, o.codeGrant(loc.Query().Get("code")), reqStyle{}); r.Code != 200 {
			t.Fatalf("token: %d %v", r.Code, r.Body)
		}
	})
}

// TestAppSecretStepUp: creating an app asks a user with a second factor
// for it again once the last one is older than the step-up window; the
// code given there is accepted once, and the action goes on after it.
func TestAppSecretStepUp(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := newServer(t, serverOpt{opts: []apitest.Option{apitest.WithApp(app.WithClock(clock))}})
	oauth.SetClock(s.svc, clock)
	o := s.org(t, "acme", "admin")
	m := s.App.MFA()
	e, err := m.BeginTOTP(o.Ctx, o.userID, o.email)
	if err != nil {
		t.Fatal(err)
	}
	secret := e.Key.Secret()
	code := func() string { c, _ := totp.GenerateCode(secret, clock()); return c }
	if _, err := m.ConfirmTOTP(o.Ctx, o.userID, code()); err != nil {
		t.Fatal(err)
	}
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	advance(mfa.Period * time.Second)
	c := o.browser(t)
	lp := do(t, c, "GET", o.Server.URL+"/login", nil)
	do(t, c, "POST", o.Server.URL+"/login", url.Values{"csrf_token": {csrfOf(t, lp.Body)}, "email": {o.email}, "password": {testPassword}, "next": {"/developer/my-apps"}})
	fp := do(t, c, "GET", o.Server.URL+"/login/factor?next=%2Fdeveloper%2Fmy-apps", nil)
	if p := do(t, c, "POST", o.Server.URL+"/login/factor", url.Values{"csrf_token": {csrfOf(t, fp.Body)}, "code": {code()}, "next": {"/developer/my-apps"}}); p.Code != http.StatusSeeOther {
		t.Fatalf("factor: %d", p.Code)
	}
	create := func(name string) page {
		ap := do(t, c, "GET", o.Server.URL+"/developer/my-apps", nil)
		return do(t, c, "POST", o.Server.URL+"/developer/my-apps", url.Values{"csrf_token": {csrfOf(t, ap.Body)},
			"name": {name}, "redirect_uris": {"https://app.example.com/cb"}, "scopes": {"clients:read"}})
	}
	if p := create("First"); p.Code != http.StatusSeeOther || p.Location != "/developer/my-apps" {
		t.Fatalf("create right after the factor: %d %q", p.Code, p.Location)
	}
	advance(oauth.StepUpWindow + time.Second)
	p := create("Second")
	if p.Code != http.StatusSeeOther || !strings.HasPrefix(p.Location, "/login/confirm?") {
		t.Fatalf("create after the window: %d %q", p.Code, p.Location)
	}
	sp := do(t, c, "GET", o.Server.URL+p.Location, nil)
	if sp.Code != 200 || !strings.Contains(sp.Body, `id="stepup"`) {
		t.Fatalf("step-up page: %d %s", sp.Code, sp.Body)
	}
	fresh := code()
	if p := do(t, c, "POST", o.Server.URL+"/login/confirm", url.Values{"csrf_token": {csrfOf(t, sp.Body)}, "code": {fresh}, "next": {"/developer/my-apps"}}); p.Code != http.StatusSeeOther || p.Location != "/developer/my-apps" {
		t.Fatalf("step-up: %d %q", p.Code, p.Location)
	}
	if p := create("Second"); p.Code != http.StatusSeeOther || p.Location != "/developer/my-apps" {
		t.Fatalf("create after the step-up: %d %q", p.Code, p.Location)
	}
	// The same code again is refused.
	advance(oauth.StepUpWindow + time.Second)
	p = create("Third")
	sp = do(t, c, "GET", o.Server.URL+p.Location, nil)
	if p := do(t, c, "POST", o.Server.URL+"/login/confirm", url.Values{"csrf_token": {csrfOf(t, sp.Body)}, "code": {fresh}, "next": {"/developer/my-apps"}}); p.Code != http.StatusUnauthorized {
		t.Fatalf("a used code at step-up: %d", p.Code)
	}
}

// TestAuthorizationCodeFlowWithPasskey: the authorization-code flow of a
// user whose factor is a passkey gets no code on the password alone; the
// passkey on the factor page (begin, then the browser's answer) goes on
// to the consent and its code.
func TestAuthorizationCodeFlowWithPasskey(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "admin")
		rp := mfa.RelyingParty{ID: o.Host, Origin: "http://" + o.Host}
		key := passkeytest.New(t)
		m := o.s.App.MFA()
		pu := mfa.PasskeyUser{ID: o.userID, Email: o.email}
		opts, err := m.BeginPasskeyRegistration(o.Ctx, rp, pu)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.FinishPasskeyRegistration(o.Ctx, rp, pu, "Key", key.Create(t, opts, rp.Origin, rp.ID)); err != nil {
			t.Fatal(err)
		}
		c := o.browser(t)
		params := o.authParams("xyz-state-123")
		authz := "/oauth/authorize?" + params.Encode()
		p := do(t, c, "GET", o.Server.URL+authz, nil)
		lp := do(t, c, "GET", o.Server.URL+p.Location, nil)
		p = do(t, c, "POST", o.Server.URL+"/login", url.Values{
			"csrf_token": {csrfOf(t, lp.Body)}, "email": {o.email}, "password": {testPassword}, "next": {authz},
		})
		if p.Code != http.StatusSeeOther || !strings.HasPrefix(p.Location, "/login/factor?") {
			t.Fatalf("password: %d %q", p.Code, p.Location)
		}
		factorPage := p.Location
		if p = do(t, c, "GET", o.Server.URL+authz, nil); p.Code != http.StatusFound || !strings.HasPrefix(p.Location, "/login/factor?") {
			t.Fatalf("authorize on the password alone: %d %q", p.Code, p.Location)
		}
		fp := do(t, c, "GET", o.Server.URL+factorPage, nil)
		if fp.Code != 200 || !strings.Contains(fp.Body, `id="passkey-form"`) {
			t.Fatalf("factor page: %d %s", fp.Code, fp.Body)
		}
		tok := csrfOf(t, fp.Body)
		b := do(t, c, "POST", o.Server.URL+"/login/factor/passkey/begin", url.Values{"csrf_token": {tok}})
		if b.Code != http.StatusOK {
			t.Fatalf("begin: %d %s", b.Code, b.Body)
		}
		next, _ := url.Parse(factorPage)
		p = do(t, c, "POST", o.Server.URL+"/login/factor/passkey", url.Values{"csrf_token": {tok}, "next": {next.Query().Get("next")},
			"credential": {string(key.Get(t, []byte(b.Body), rp.Origin, rp.ID))}})
		if p.Code != http.StatusSeeOther || p.Location != authz {
			t.Fatalf("a good passkey: %d %q %s", p.Code, p.Location, p.Body)
		}
		p = do(t, c, "GET", o.Server.URL+p.Location, nil)
		form := hiddenFields(p.Body)
		form.Set("decision", "allow")
		p = do(t, c, "POST", o.Server.URL+"/oauth/authorize", form)
		loc, _ := url.Parse(p.Location)
		if p.Code != http.StatusFound || loc.Query().Get("code") == "" {
			t.Fatalf("allow: %d %q", p.Code, p.Location)
		}
		if r := o.token(t, o.codeGrant(loc.Query().Get("code")), reqStyle{}); r.Code != 200 {
			t.Fatalf("token: %d %v", r.Code, r.Body)
		}
	})
}
