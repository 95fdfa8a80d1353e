package console_test

import (
	"bytes"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/pquerna/otp/totp"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/mfa"
)

var (
	secretRE   = regexp.MustCompile(`id="totp-secret" class="secret" value="([^"]+)"`)
	recoveryRE = regexp.MustCompile(`<li><code>([a-z0-9-]+)</code></li>`)
	logoutRE   = regexp.MustCompile(`action="/logout"><input type="hidden" name="csrf_token" value="([^"]+)"`)
)

// syncBuffer is a log sink the server's goroutines write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func totpCode(t testing.TB, secret string, at time.Time) string {
	t.Helper()
	c, err := totp.GenerateCode(secret, at)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// logout signs the client out with the layout's form on the page at from.
func (c *client) logout(from string) {
	c.t.Helper()
	page := c.do("GET", from, nil)
	m := logoutRE.FindStringSubmatch(page.body)
	if m == nil {
		c.t.Fatalf("no sign-out form on %s: %d %s", from, page.code, page.body)
	}
	if r := c.do("POST", "/logout", url.Values{"csrf_token": {html.UnescapeString(m[1])}}); r.code != http.StatusSeeOther {
		c.t.Fatalf("sign out: %d", r.code)
	}
}

// password signs in with the password only and returns where it leads.
func (c *client) password(p person, next string) resp {
	c.t.Helper()
	page := c.do("GET", "/login", nil)
	return c.do("POST", "/login", url.Values{"csrf_token": {csrf(c.t, page.body)}, "email": {p.email}, "password": {password}, "next": {next}})
}

// factor posts a code on the factor page.
func (c *client) factor(code, next string) resp {
	c.t.Helper()
	page := c.do("GET", "/login/factor?next="+url.QueryEscape(next), nil)
	if page.code != http.StatusOK {
		c.t.Fatalf("factor page: %d %s", page.code, page.location)
	}
	return c.do("POST", "/login/factor", url.Values{"csrf_token": {csrf(c.t, page.body)}, "code": {code}, "next": {next}})
}

func (c *client) sessionCookie() string {
	u, _ := url.Parse(c.o.Server.URL)
	for _, ck := range c.hc.Jar.Cookies(u) {
		if ck.Name == "finsvc_session" {
			return ck.Value
		}
	}
	return ""
}

// enrol sets up an authenticator for the signed-in client and returns its
// secret, the code that confirmed it and the recovery codes.
func (c *client) enrol(t *testing.T) (secret, first string, recovery []string) {
	t.Helper()
	if r := c.post("/console/account", "/console/account/totp"); r.code != http.StatusSeeOther || !strings.HasPrefix(r.location, "/console/account") {
		t.Fatalf("begin enrolment: %d %s %s", r.code, r.location, r.body)
	}
	page := c.do("GET", "/console/account", nil)
	m := secretRE.FindStringSubmatch(page.body)
	if m == nil || !strings.Contains(page.body, `src="data:image/png;base64,`) {
		t.Fatalf("no secret or QR image on the enrolment page: %s", page.body)
	}
	secret = html.UnescapeString(m[1])
	first = totpCode(t, secret, time.Now())
	wrong := "000000"
	if wrong == first {
		wrong = "111111"
	}
	if r := c.do("POST", "/console/account/totp/confirm", url.Values{"csrf_token": {csrf(t, page.body)}, "code": {wrong}}); r.code != http.StatusBadRequest || !strings.Contains(r.body, `id="code-error"`) {
		t.Fatalf("a wrong first code: %d", r.code)
	}
	before := c.sessionCookie()
	if r := c.do("POST", "/console/account/totp/confirm", url.Values{"csrf_token": {csrf(t, page.body)}, "code": {first}}); r.code != http.StatusSeeOther {
		t.Fatalf("confirm enrolment: %d %s", r.code, r.body)
	}
	if c.sessionCookie() == before {
		t.Fatal("the enrolment did not rotate the session id")
	}
	shown := c.do("GET", "/console/account", nil)
	if shown.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("the recovery codes' page is cacheable: %q", shown.header.Get("Cache-Control"))
	}
	for _, m := range recoveryRE.FindAllStringSubmatch(shown.body, -1) {
		recovery = append(recovery, m[1])
	}
	if len(recovery) != 10 {
		t.Fatalf("%d recovery codes shown, want 10: %s", len(recovery), shown.body)
	}
	if again := c.do("GET", "/console/account", nil); recoveryRE.MatchString(again.body) {
		t.Fatal("the recovery codes were shown twice")
	}
	return secret, first, recovery
}

// TestSecondFactorSignIn: enrol, then a sign-in needs the code after the
// password: the password alone reaches no console page; the enrolment's
// code again, and a code two steps old, are refused; a good code signs in
// on a new session id that records both factors; a recovery code works
// once and says how many remain. No secret or code is in a log line or an
// audit record.
func TestSecondFactorSignIn(t *testing.T) {
	logs := &syncBuffer{}
	env := newEnv(t, apitest.WithApp(app.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))))
	o := newOrg(t, env, "acme")
	c := o.client(t)
	c.login(o.admin)
	if acct := c.do("GET", "/console/account", nil); acct.code != http.StatusOK || !strings.Contains(acct.body, `id="totp-off"`) || !strings.Contains(acct.body, `data-amr="pwd"`) {
		t.Fatalf("account page before enrolment: %d %s", acct.code, acct.body)
	}
	secret, first, recovery := c.enrol(t)
	if acct := c.do("GET", "/console/account", nil); !strings.Contains(acct.body, `data-amr="otp"`) || !strings.Contains(acct.body, "10 of 10 recovery codes left") {
		t.Fatalf("account page after enrolment: %s", acct.body)
	}
	c.logout("/console/account")

	r := c.password(o.admin, "/console/webhooks")
	if r.code != http.StatusSeeOther || !strings.HasPrefix(r.location, "/login/factor") {
		t.Fatalf("password of a user with a factor: %d %s", r.code, r.location)
	}
	half := c.sessionCookie()
	for _, path := range []string{"/console/webhooks", "/console/account", "/console/users", "/developer/my-apps", "/account/apps"} {
		if r := c.do("GET", path, nil); r.code != http.StatusFound || !strings.HasPrefix(r.location, "/login/factor") {
			t.Fatalf("GET %s on the password alone: %d %s", path, r.code, r.location)
		}
	}
	if r := c.factor(first, "/console/webhooks"); r.code != http.StatusUnauthorized {
		t.Fatalf("the enrolment's code again: %d", r.code)
	}
	if r := c.factor(totpCode(t, secret, time.Now().Add(-2*mfa.Period*time.Second)), "/console/webhooks"); r.code != http.StatusUnauthorized {
		t.Fatalf("a code two steps old: %d", r.code)
	}
	// The next step's code (within the skew) is one never used.
	next := totpCode(t, secret, time.Now().Add(mfa.Period*time.Second))
	if r := c.factor(next, "/console/webhooks"); r.code != http.StatusSeeOther || r.location != "/console/webhooks" {
		t.Fatalf("a good code: %d %s %s", r.code, r.location, r.body)
	}
	if c.sessionCookie() == half || c.sessionCookie() == "" {
		t.Fatal("the second factor did not rotate the session id")
	}
	if r := c.do("GET", "/console/webhooks", nil); r.code != http.StatusOK {
		t.Fatalf("console after the second factor: %d", r.code)
	}
	if acct := c.do("GET", "/console/account", nil); !strings.Contains(acct.body, `data-amr="pwd"`) || !strings.Contains(acct.body, `data-amr="otp"`) {
		t.Fatalf("the session's factors are not shown: %s", acct.body)
	}
	c.logout("/console/webhooks")
	if r := c.do("GET", "/login/factor", nil); r.code != http.StatusFound || !strings.HasPrefix(r.location, "/login?") {
		t.Fatalf("the factor page without a password: %d %s", r.code, r.location)
	}

	// A recovery code: once, with how many remain.
	c.password(o.admin, "/console/webhooks")
	if r := c.factor(strings.ToUpper(recovery[2]), "/console/webhooks"); r.code != http.StatusSeeOther {
		t.Fatalf("a recovery code: %d", r.code)
	}
	if land := c.do("GET", "/console/webhooks", nil); !strings.Contains(land.body, "9 remain") {
		t.Fatalf("the landing page does not say how many recovery codes remain: %s", land.body)
	}
	c.logout("/console/webhooks")
	c.password(o.admin, "/console/webhooks")
	if r := c.factor(recovery[2], "/console/webhooks"); r.code != http.StatusUnauthorized {
		t.Fatalf("a recovery code used twice: %d", r.code)
	}

	// Audit: enrolment, each use, the failures, the recovery code.
	var rows []audit.Row
	if err := env.DB.Order("id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, row := range rows {
		count[row.Action+"/"+row.Outcome]++
		text := fmt.Sprintf("%+v", row)
		for _, s := range append([]string{secret, first, next}, recovery...) {
			if strings.Contains(text, s) {
				t.Fatalf("an audit record carries a secret or code: %s", text)
			}
		}
	}
	for k, want := range map[string]int{"mfa.enrolled/success": 1, "mfa.enrolled/failure": 1, "mfa.verified/success": 1,
		"mfa.verified/failure": 3, "mfa.recovery_code_used/success": 1} {
		if count[k] != want {
			t.Errorf("%d records %s, want %d (all: %v)", count[k], k, want, count)
		}
	}
	out := logs.String()
	if out == "" {
		t.Fatal("nothing was logged: the check below proves nothing")
	}
	for _, s := range append([]string{secret, first, next}, recovery...) {
		if strings.Contains(out, s) || strings.Contains(out, strings.ToUpper(s)) {
			t.Fatalf("the log carries a secret or code %q", s)
		}
	}
}

// TestSecondFactorThrottle: wrong codes spend the sign-in's counters: after
// them, even the right password is refused for a while.
func TestSecondFactorThrottle(t *testing.T) {
	env := newEnv(t)
	o := newOrg(t, env, "acme")
	c := o.client(t)
	c.login(o.member)
	c.enrol(t)
	c.logout("/console/account")
	c.password(o.member, "/console/webhooks")
	codes := 0
	for i := range 10 {
		r := c.factor(fmt.Sprintf("%06d", i), "/console/webhooks")
		if r.code == http.StatusTooManyRequests {
			break
		}
		codes++
	}
	if codes == 0 || codes > 5 {
		t.Fatalf("%d wrong codes before the throttle, want 1..5", codes)
	}
	c2 := o.client(t)
	if r := c2.password(o.member, "/console/webhooks"); r.code != http.StatusTooManyRequests {
		t.Fatalf("the password after wrong codes: %d, want 429", r.code)
	}
}

// TestPolicyRouteWalk: with the policy at "everyone", a member without a
// factor is sent to enrolment right after the password, and every console
// route leads there (or to sign-in) until they enrol; enrolling signs them
// in. The policy change is audited.
func TestPolicyRouteWalk(t *testing.T) {
	env := newEnv(t)
	o := newOrg(t, env, "acme")
	a := o.client(t)
	a.login(o.admin)
	page := a.do("GET", "/console/security", nil)
	if page.code != http.StatusOK {
		t.Fatalf("policy page: %d", page.code)
	}
	if r := a.do("POST", "/console/security", url.Values{"csrf_token": {csrf(t, page.body)}, "policy": {"everyone"}}); r.code != http.StatusSeeOther {
		t.Fatalf("set the policy: %d %s", r.code, r.body)
	}
	var n int64
	env.DB.Model(&audit.Row{}).Where("action = ?", audit.MFAPolicyChanged).Count(&n)
	if n != 1 {
		t.Fatalf("%d policy change records, want 1", n)
	}

	m := o.client(t)
	r := m.password(o.member, "/console/acts")
	if r.code != http.StatusSeeOther || !strings.HasPrefix(r.location, "/console/account") {
		t.Fatalf("a covered member's password: %d %s", r.code, r.location)
	}
	e, ok := env.App.Handler().(*echo.Echo)
	if !ok {
		t.Fatalf("the handler is %T, not the echo router", env.App.Handler())
	}
	walked := 0
	for _, rt := range e.Routes() {
		if !strings.HasPrefix(rt.Path, "/console") || rt.Path == "/console" {
			continue
		}
		path := strings.NewReplacer(":id", "1", ":delivery", "1", ":n", "1", ":uuid", "00000000-0000-0000-0000-000000000000").Replace(rt.Path)
		// Enrolment: an authenticator app, or a passkey (its two steps).
		enrolment := strings.HasPrefix(path, "/console/account/totp") || path == "/console/account/passkeys" || path == "/console/account/passkeys/begin"
		allowed := strings.HasPrefix(path, "/console/account") && (rt.Method == http.MethodGet || enrolment)
		var got resp
		if rt.Method == http.MethodGet {
			got = m.do("GET", path, nil)
		} else {
			acct := m.do("GET", "/console/account", nil)
			got = m.do(rt.Method, path, url.Values{"csrf_token": {csrf(t, acct.body)}})
		}
		walked++
		if allowed {
			continue
		}
		if got.code != http.StatusFound && got.code != http.StatusSeeOther || !strings.HasPrefix(got.location, "/console/account") {
			t.Errorf("%s %s while enrolment is due: %d %s", rt.Method, path, got.code, got.location)
		}
	}
	if walked < 25 {
		t.Fatalf("walked %d console routes; the walk missed some", walked)
	}
	for _, path := range []string{"/developer/my-apps", "/account/apps", "/account/password"} {
		if got := m.do("GET", path, nil); got.code != http.StatusFound || !strings.HasPrefix(got.location, "/console/account") {
			t.Errorf("GET %s while enrolment is due: %d %s", path, got.code, got.location)
		}
	}
	// The enrolment page has no navigation, only sign-out.
	acct := m.do("GET", "/console/account?next=%2Fconsole%2Facts", nil)
	if strings.Contains(acct.body, `href="/console/webhooks"`) || !strings.Contains(acct.body, `id="enrol-required"`) {
		t.Fatalf("the enrolment page: %s", acct.body)
	}
	m.enrol(t)
	if got := m.do("GET", "/console/acts", nil); got.code != http.StatusOK {
		t.Fatalf("after enrolling: %d %s", got.code, got.location)
	}
	// Admins only.
	if got := m.do("GET", "/console/security", nil); got.code != http.StatusForbidden {
		t.Fatalf("a member on the policy page: %d", got.code)
	}
}

// enrolStore gives p an authenticator through the store (no browser
// session knows of it) and returns its secret.
func enrolStore(t *testing.T, env *apitest.Env, o *org, p person) string {
	t.Helper()
	m := env.App.MFA()
	e, err := m.BeginTOTP(o.Ctx, p.id, p.email)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.ConfirmTOTP(o.Ctx, p.id, totpCode(t, e.Key.Secret(), time.Now())); err != nil {
		t.Fatal(err)
	}
	return e.Key.Secret()
}

// TestStepUp: a user with a second factor not given on this session is
// sent to give it before revealing a webhook secret, changing a role,
// issuing a one-time password or changing the policy; after it, the
// reveal still asks for the password, and the rest go on. A user without
// a factor keeps the password re-prompt alone.
func TestStepUp(t *testing.T) {
	env := newEnv(t)
	o := newOrg(t, env, "acme")
	wh := o.webhook(t, o.admin, "https://127.0.0.1:9/hook")
	mine := o.webhook(t, o.member, "https://127.0.0.1:9/member")
	a := o.client(t)
	a.login(o.admin)
	secret := enrolStore(t, env, o, o.admin)
	secretPage := fmt.Sprintf("/console/webhooks/%d/secret", wh.Id)
	if r := a.do("GET", secretPage, nil); r.code != http.StatusSeeOther || r.location != "/login/confirm?next="+url.QueryEscape(secretPage) {
		t.Fatalf("reveal without a fresh factor: %d %q", r.code, r.location)
	}
	users := a.do("GET", "/console/users", nil)
	tok := csrf(t, users.body)
	for path, form := range map[string]url.Values{
		fmt.Sprintf("/console/users/%d/role", o.viewer.id):              {"csrf_token": {tok}, "role": {"member"}},
		fmt.Sprintf("/console/users/%d/one-time-password", o.viewer.id): {"csrf_token": {tok}},
		"/console/security": {"csrf_token": {tok}, "policy": {"admins"}},
	} {
		if r := a.do("POST", path, form); r.code != http.StatusSeeOther || !strings.HasPrefix(r.location, "/login/confirm?") {
			t.Fatalf("POST %s without a fresh factor: %d %q", path, r.code, r.location)
		}
	}
	if p, _ := env.App.MFA().Policy(o.Ctx); p != mfa.PolicyOff {
		t.Fatalf("the policy changed without a step-up: %s", p)
	}
	sp := a.do("GET", "/login/confirm?next="+url.QueryEscape(secretPage), nil)
	if sp.code != http.StatusOK {
		t.Fatalf("step-up page: %d", sp.code)
	}
	code := totpCode(t, secret, time.Now().Add(mfa.Period*time.Second))
	if r := a.do("POST", "/login/confirm", url.Values{"csrf_token": {csrf(t, sp.body)}, "code": {code}, "next": {secretPage}}); r.code != http.StatusSeeOther || r.location != secretPage {
		t.Fatalf("step-up: %d %q", r.code, r.location)
	}
	page := a.do("GET", secretPage, nil)
	if page.code != http.StatusOK || !strings.Contains(page.body, `id="reveal-form"`) {
		t.Fatalf("reveal page after the step-up: %d", page.code)
	}
	if r := a.do("POST", secretPage, url.Values{"csrf_token": {csrf(t, page.body)}, "password": {password}}); r.code != http.StatusSeeOther {
		t.Fatalf("reveal after the step-up: %d", r.code)
	}
	if shown := a.do("GET", secretPage, nil); revealed(shown.body)["current"] != wh.Secret {
		t.Fatal("the secret was not revealed after the step-up")
	}
	users = a.do("GET", "/console/users", nil)
	if r := a.do("POST", fmt.Sprintf("/console/users/%d/role", o.viewer.id), url.Values{"csrf_token": {csrf(t, users.body)}, "role": {"member"}}); r.code != http.StatusSeeOther || r.location != "/console/users" {
		t.Fatalf("role change after the step-up: %d %q", r.code, r.location)
	}

	// Without a factor: the password re-prompt, no step-up.
	m := o.client(t)
	m.login(o.member)
	memberSecret := fmt.Sprintf("/console/webhooks/%d/secret", mine.Id)
	if r := m.do("GET", memberSecret, nil); r.code != http.StatusOK || !strings.Contains(r.body, `id="password"`) {
		t.Fatalf("reveal page of a user without a factor: %d %q", r.code, r.location)
	}

	// An admin's reset of the member's factor: audited, told at sign-in.
	enrolStore(t, env, o, o.member)
	_, tokReset := a.ask("/console/users", fmt.Sprintf("/console/users/%d/reset-mfa", o.member.id))
	if r := a.do("POST", fmt.Sprintf("/console/users/%d/reset-mfa", o.member.id), url.Values{"csrf_token": {tokReset}}); r.code != http.StatusSeeOther {
		t.Fatalf("reset: %d %s", r.code, r.body)
	}
	if st, _ := env.App.MFA().Status(o.Ctx, o.member.id); st.Has() {
		t.Fatal("the member still has a factor after the reset")
	}
	var n int64
	env.DB.Model(&audit.Row{}).Where("action = ? AND actor_user_id = ? AND target_id = ?", audit.MFARemoved, o.admin.id, fmt.Sprint(o.member.id)).Count(&n)
	if n != 1 {
		t.Fatalf("%d reset records, want 1", n)
	}
	_, tokAgain := a.ask("/console/users", fmt.Sprintf("/console/users/%d/reset-mfa", o.member.id))
	a.do("POST", fmt.Sprintf("/console/users/%d/reset-mfa", o.member.id), url.Values{"csrf_token": {tokAgain}})
	if r := a.do("GET", "/console/users", nil); !strings.Contains(r.body, "has no second factor: nothing was removed") {
		t.Fatal("resetting a user without a factor does not say so")
	}
	m2 := o.client(t)
	if r := m2.password(o.member, "/console/webhooks"); r.code != http.StatusSeeOther || r.location != "/console/webhooks" {
		t.Fatalf("the member's sign-in after the reset: %d %q", r.code, r.location)
	}
	if land := m2.do("GET", "/console/webhooks", nil); !strings.Contains(land.body, "An admin removed your second factor") {
		t.Fatalf("the member was not told of the reset: %s", land.body)
	}
}
