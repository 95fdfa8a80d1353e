package console_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/finsvc/finsvc/internal/web/browsertest"
)

// TestBrowserRevealSecret, at 1280 and 390 px (Shoot, axe-core
// included): an admin opens a webhook's secret from its page, types a
// wrong password (a sentence beside the field), then the right one, and
// sees the secret that signs in a read-only field whose Copy button (the
// page's one script) copies it; a reload shows the password form again.
// Any console error, refused script or failed load fails the test.
func TestBrowserRevealSecret(t *testing.T) {
	browsertest.Chromium(t)
	env := newEnv(t)
	acme := newOrg(t, env, "acme")
	wh := acme.webhook(t, acme.admin, "https://127.0.0.1:9/admin")
	detail := fmt.Sprintf("/console/webhooks/%d", wh.Id)

	b, base := signIn(t, acme, acme.admin, detail)
	b.Submit("#reveal-secret")
	if b.Path() != detail+"/secret" || b.Count("#password") != 1 || b.Count("#current-secret") != 0 {
		t.Fatalf("reveal page %s: %q", b.Path(), b.Text("main"))
	}
	b.Shoot("secret-password")

	b.Allow(base + detail + "/secret")
	b.Fill("#password", "not my password at all")
	b.Submit("#reveal")
	if b.Status() != http.StatusBadRequest || b.Text("#password-error") != "Your password is not the one you sign in with." || b.Count("#current-secret") != 0 {
		t.Fatalf("wrong password: %d %q", b.Status(), b.Text("#password-error"))
	}
	b.Shoot("secret-wrong-password")

	b.Fill("#password", password)
	b.Submit("#reveal")
	got := browsertest.Eval[string](b, `document.querySelector("#current-secret").value`)
	if got != wh.Secret || got != signing(t, acme, wh.Id)[0] || !browsertest.Eval[bool](b, `document.querySelector("#current-secret").readOnly`) {
		t.Fatalf("revealed %q, want the secret that signs", got)
	}
	if strings.Contains(b.Path(), "secret=") || strings.Contains(b.Path(), got) {
		t.Fatalf("the secret is in the URL: %s", b.Path())
	}
	// The Copy button is the script's: shown, and it copies.
	if browsertest.Eval[bool](b, `document.querySelector("#copy-current").hidden`) {
		t.Fatal("the Copy button stayed hidden: the script did not run")
	}
	for _, perm := range []string{"clipboard-read", "clipboard-write"} {
		if _, err := chromedp.CallBrowser(b.Ctx, browser.SetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: perm}, Setting: browser.PermissionSettingGranted, Origin: base,
		}); err != nil {
			t.Fatalf("allow %s: %v", perm, err)
		}
	}
	b.Do("copy", chromedp.Click(chromedp.CSS("#copy-current")))
	b.Do("wait for the status", chromedp.WaitVisible(`#copy-status:not(:empty)`))
	if s := b.Text("#copy-status"); s != "Copied." {
		t.Fatalf("copy status %q", s)
	}
	clip, err := chromedp.Run(b.Ctx, chromedp.Evaluate[string]("navigator.clipboard.readText()", chromedp.EvalAwaitPromise))
	if err != nil || clip != wh.Secret {
		t.Fatalf("clipboard %q (%v), want the secret", clip, err)
	}
	b.Shoot("secret-revealed")

	b.Do("reload", chromedp.Reload())
	if b.Count("#current-secret") != 0 || b.Count("#password") != 1 {
		t.Fatal("a reload shows the secret again")
	}
}
