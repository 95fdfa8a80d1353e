package console_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/mfa"
	"github.com/finsvc/finsvc/internal/web/browsertest"
)

// TestBrowserSecondFactor, at 1280 and 390 px (Shoot, axe-core
// included): an admin sets up an authenticator from the account page (QR
// code and secret, a first code, the recovery codes shown once), opens the
// policy page, signs out, and signs in with the password then a code (a
// wrong one first); the step-up page is checked too. Any console error or
// failed load fails the test.
func TestBrowserSecondFactor(t *testing.T) {
	browsertest.Chromium(t)
	env := newEnv(t)
	acme := newOrg(t, env, "acme")
	b, base := signIn(t, acme, acme.admin, "/console/account")
	if b.Count("#totp-off") != 1 {
		t.Fatalf("account page: %q", b.Text("main"))
	}
	b.Shoot("account")

	b.Submit("#setup-totp")
	if b.Count("#qr") != 1 || !browsertest.Eval[bool](b, `document.querySelector("#qr").naturalWidth > 0`) {
		t.Fatal("the QR code image did not load")
	}
	secret := browsertest.Eval[string](b, `document.querySelector("#totp-secret").value`)
	b.Shoot("account-setup")

	b.Allow(base + "/console/account/totp/confirm")
	b.Fill("#code", "12345")
	b.Submit("#confirm")
	if b.Status() != http.StatusBadRequest || b.Count("#code-error") != 1 {
		t.Fatalf("a wrong first code: %d", b.Status())
	}
	b.Shoot("account-setup-wrong")
	b.Fill("#code", totpCode(t, secret, time.Now()))
	b.Submit("#confirm")
	if n := b.Count("#recovery-codes li"); n != 10 {
		t.Fatalf("%d recovery codes shown, want 10", n)
	}
	b.Shoot("account-recovery")

	b.Open(base + "/console/security")
	if b.Count("#policy-off:checked") != 1 {
		t.Fatal("the policy page does not show the default policy")
	}
	b.Shoot("security")

	b.Submit("#logout")
	b.Open(base + "/console/webhooks")
	b.Fill("#email", acme.admin.email)
	b.Fill("#password", password)
	b.Submit("#signin")
	if !strings.HasPrefix(b.Path(), "/login/factor?") {
		t.Fatalf("after the password: %s", b.Path())
	}
	b.Shoot("factor")
	b.Allow(base + "/login/factor")
	b.Fill("#code", "000000")
	b.Submit("#verify")
	if b.Status() != http.StatusUnauthorized {
		t.Fatalf("a wrong code: %d", b.Status())
	}
	b.Shoot("factor-wrong")
	b.Fill("#code", totpCode(t, secret, time.Now().Add(mfa.Period*time.Second)))
	b.Submit("#verify")
	if b.Path() != "/console/webhooks" {
		t.Fatalf("after the code: %s", b.Path())
	}
	b.Open(base + "/login/confirm?next=%2Fconsole%2Fusers")
	if b.Count("#stepup") != 1 {
		t.Fatalf("step-up page: %q", b.Text("main"))
	}
	b.Shoot("stepup")
}
