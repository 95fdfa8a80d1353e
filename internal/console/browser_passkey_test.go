package console_test

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"

	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/web/browsertest"
)

// TestBrowserPasskey, at 1280 and 390 px (Shoot, axe-core included),
// with the DevTools WebAuthn domain's virtual authenticator (CTAP2, a
// platform authenticator with resident keys and user verification): an
// admin adds a named passkey on the account page, renames it, signs out,
// signs in with the password and then the passkey (the session's factors
// say so), steps up with the passkey to reveal a webhook's secret, and
// removes the passkey (asked first). The passkey script runs under the
// pages' CSP; any console error, refused script or failed load fails the
// test; no audit record holds the credential id.
func TestBrowserPasskey(t *testing.T) {
	browsertest.Chromium(t)
	env := newEnv(t)
	acme := newOrg(t, env, "acme")
	wh := acme.webhook(t, acme.admin, "https://127.0.0.1:9/admin")
	detail := fmt.Sprintf("/console/webhooks/%d", wh.Id)

	b, base := signIn(t, acme, acme.admin, "/console/account")
	if _, err := chromedp.Call(b.Ctx, webauthn.Enable, webauthn.EnableParams{}); err != nil {
		t.Fatalf("WebAuthn.enable: %v", err)
	}
	auth, err := chromedp.Call(b.Ctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
		Protocol: webauthn.AuthenticatorProtocolCtap2, Transport: webauthn.AuthenticatorTransportInternal,
		HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true,
	}})
	if err != nil {
		t.Fatalf("WebAuthn.addVirtualAuthenticator: %v", err)
	}
	if b.Count("#no-passkeys") != 1 || browsertest.Eval[bool](b, `document.querySelector("#add-passkey").hidden`) {
		t.Fatalf("account page without passkeys, or the passkey form stayed hidden (script not run): %q", b.Text("main"))
	}
	b.Shoot("account-passkeys")

	b.Fill("#passkey-name", "Work laptop")
	b.Submit("#add-passkey-button")
	if !strings.Contains(b.Text("#notice"), `"Work laptop" is added`) || b.Count("#passkey-list li") != 1 {
		t.Fatalf("after adding: %q %q", b.Text("#notice"), b.Text("main"))
	}
	creds, err := chromedp.Call(b.Ctx, webauthn.GetCredentials, webauthn.GetCredentialsParams(auth))
	if err != nil || len(creds.Credentials) != 1 || creds.Credentials[0].RpID != "acme.localhost" {
		t.Fatalf("the authenticator's credentials: %+v %v", creds, err)
	}
	credID := creds.Credentials[0].CredentialID
	b.Shoot("account-passkey-added")

	b.Fill("#passkey-name-1", "Laptop")
	b.Submit("#rename-passkey-1")
	if got := browsertest.Eval[string](b, `document.querySelector("#passkey-name-1").value`); got != "Laptop" {
		t.Fatalf("renamed to %q", got)
	}

	// Sign out; the password, then the passkey.
	b.Submit("#logout")
	b.Open(base + "/console/webhooks")
	b.Fill("#email", acme.admin.email)
	b.Fill("#password", password)
	b.Submit("#signin")
	if !strings.HasPrefix(b.Path(), "/login/factor?") || b.Count("#passkey-form:not([hidden])") != 1 || b.Count("#code") != 0 {
		t.Fatalf("after the password: %s %q", b.Path(), b.Text("main"))
	}
	b.Shoot("factor-passkey")
	b.Submit("#use-passkey")
	if b.Path() != "/console/webhooks" {
		t.Fatalf("after the passkey: %s %q", b.Path(), b.Text("main"))
	}
	b.Open(base + "/console/account")
	if got := b.Text("#amr"); !strings.Contains(got, "password") || !strings.Contains(got, "passkey") {
		t.Fatalf("the session's factors: %q", got)
	}
	if !strings.Contains(b.Text("#passkey-list"), "last used 20") {
		t.Fatalf("the passkey's last use is not shown: %q", b.Text("#passkey-list"))
	}

	// Step-up: the factor given more than five minutes ago.
	if err := env.DB.Exec("UPDATE web_sessions SET factor_at = ? WHERE factor_at IS NOT NULL", time.Now().Add(-10*time.Minute).UTC()).Error; err != nil {
		t.Fatal(err)
	}
	b.Open(base + detail + "/secret")
	if !strings.HasPrefix(b.Path(), "/login/confirm?") || b.Count("#stepup") != 1 || b.Count("#passkey-form:not([hidden])") != 1 {
		t.Fatalf("revealing a secret with a stale factor: %s %q", b.Path(), b.Text("main"))
	}
	b.Shoot("stepup-passkey")
	b.Submit("#use-passkey")
	if b.Path() != detail+"/secret" || b.Count("#password") != 1 {
		t.Fatalf("after the step-up: %s %q", b.Path(), b.Text("main"))
	}
	b.Fill("#password", password)
	b.Submit("#reveal")
	if got := browsertest.Eval[string](b, `document.querySelector("#current-secret").value`); got != wh.Secret {
		t.Fatalf("revealed %q, want the webhook's secret", got)
	}

	// Remove it: asked first (the factor is fresh: no step-up).
	b.Open(base + "/console/account")
	b.Submit("#remove-passkey-1")
	if !strings.Contains(b.Text("#confirm-title"), `"Laptop"`) {
		t.Fatalf("the removal's question: %q", b.Text("main"))
	}
	b.Shoot("passkey-remove")
	b.Submit("#confirm-yes")
	if b.Text("#notice") != "The passkey was removed." || b.Count("#no-passkeys") != 1 {
		t.Fatalf("after removing: %q %q", b.Text("#notice"), b.Text("main"))
	}

	var all []audit.Row
	env.DB.Order("id").Find(&all)
	dump, _ := json.Marshal(all)
	for _, enc := range credIDEncodings(credID) {
		if strings.Contains(string(dump), enc) {
			t.Fatalf("an audit record holds the credential id (%s)", enc)
		}
	}
	var got []string
	for _, r := range all {
		if strings.HasPrefix(r.Action, "mfa.passkey") {
			got = append(got, r.Action+":"+r.Outcome)
		}
	}
	want := "mfa.passkey_registered:success mfa.passkey_renamed:success mfa.passkey_used:success mfa.passkey_used:success mfa.passkey_removed:success"
	if strings.Join(got, " ") != want {
		t.Fatalf("passkey audit records:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// credIDEncodings are the ways a credential id could be written down.
func credIDEncodings(id []byte) []string {
	return []string{base64.RawURLEncoding.EncodeToString(id), base64.URLEncoding.EncodeToString(id), base64.StdEncoding.EncodeToString(id), hex.EncodeToString(id)}
}
