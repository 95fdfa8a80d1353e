package oauth_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/finsvc/finsvc/internal/oauth"
	"github.com/finsvc/finsvc/internal/oauth/store"
	"github.com/finsvc/finsvc/internal/web"
	"github.com/finsvc/finsvc/internal/web/browsertest"
)

// TestBrowserPages drives Chromium through the restyled pages: sign-in by
// keyboard alone, the apps pages, registering an app (its secret shown once
// after a redirect: reloading registers nothing), the consent page (Allow is
// the primary button, each scope one described line) and the error pages.
// Every page is checked at 1280 and 390 px (labels, no overflow, the
// stylesheet applied) and any console error or failed load fails the test.
func TestBrowserPages(t *testing.T) {
	browsertest.Chromium(t)
	s := newServer(t, serverOpt{})
	o := s.org(t, "acme", "admin")
	srv, _ := url.Parse(s.Server.URL)
	base := "http://acme.localhost:" + srv.Port()
	b := browsertest.New(t, browsertest.Options{})

	// Signed out, the tenant root leads to the sign-in page.
	b.Open(base + "/")
	if p := b.Path(); !strings.HasPrefix(p, "/login") {
		t.Fatalf("root signed out: %s", p)
	}
	b.Shoot("login")
	// Keyboard only: the email field has the focus.
	if id := browsertest.Eval[string](b, "document.activeElement.id"); id != "email" {
		t.Fatalf("focus on %q, want the email field", id)
	}
	b.Keys(o.email+"\t"+testPassword, false)
	b.Keys("\r", true)
	if p := b.Path(); p != web.Home {
		t.Fatalf("after sign-in: %s, want %s", p, web.Home)
	}
	b.Open(base + "/account/apps")
	if got := b.Text("#who"); !strings.Contains(got, o.email) {
		t.Fatalf("header: %q", got)
	}
	b.Shoot("account")

	b.Open(base + "/developer/my-apps")
	if n := b.Count("#register input[type=checkbox]:checked"); n != 0 {
		t.Fatalf("%d scopes checked by default, want none", n)
	}
	b.Shoot("apps")
	b.Fill("#name", "Ledger <Sync>")
	b.Fill("#redirect_uris", "https://ledger.example.com/cb")
	b.Do("check a scope", chromedp.Click(chromedp.CSS(`label[for="scope-acts:read"]`)))
	b.Submit("#create")
	if p := b.Path(); p != "/developer/my-apps" {
		t.Fatalf("after register: %s", p)
	}
	secret := b.Text("#client_secret")
	if len(secret) != 43 || !strings.Contains(b.Text("#created"), "Ledger <Sync>") {
		t.Fatalf("secret %q, banner %q", secret, b.Text("#created"))
	}
	b.Shoot("apps-created")
	b.Do("reload", chromedp.Reload())
	if b.Count("#client_secret") != 0 || strings.Contains(b.Text("main"), secret) {
		t.Fatal("the secret is shown again after a reload")
	}
	var n int64
	if err := s.DB.Model(&store.Client{}).Where("tenant_id = ? AND name = ?", o.Tenant.ID, "Ledger <Sync>").Count(&n).Error; err != nil || n != 1 {
		t.Fatalf("apps registered: %d %v", n, err)
	}
	if got := b.Count(`#apps tbody tr`); got != 2 {
		t.Fatalf("%d apps listed, want 2", got)
	}

	// Consent: one described line per scope, Allow first and primary.
	params := o.authParams("state-browser-pages")
	params.Set("scope", "acts:read users:read")
	b.Open(base + "/oauth/authorize?" + params.Encode())
	if got := b.Count("#scopes li"); got != 2 {
		t.Fatalf("%d scope lines, want 2", got)
	}
	if line := b.Text("#scopes li"); !strings.HasPrefix(line, oauth.ScopeDescription("acts:read")) {
		t.Fatalf("scope line %q", line)
	}
	if cls := browsertest.Eval[string](b, `document.querySelector("#allow").className`); cls != "primary" {
		t.Fatalf("Allow has class %q", cls)
	}
	b.Shoot("consent")

	// Error pages are pages, styled, for a browser.
	b.OpenStatus(base+"/oauth/authorize?client_id=app_unknown&response_type=code", 400)
	if got := b.Text("#error"); !strings.Contains(got, "unknown") {
		t.Fatalf("authorize error page: %q", got)
	}
	b.Shoot("authorize-error")
	b.OpenStatus(base+"/no-such-page", 404)
	if got := b.Text("h1"); got != "Page not found" {
		t.Fatalf("unknown page: %q", got)
	}
	b.OpenStatus("http://nobody.localhost:"+srv.Port()+"/", 404)
	if got := b.Text("h1"); got != "Unknown address" {
		t.Fatalf("unknown host: %q", got)
	}
	b.Shoot("unknown-host")
	// Its way on is a page that answers, not this one again.
	b.Submit("#home")
	if b.Status() != http.StatusOK || b.Path() != "/docs" {
		t.Fatalf("home link of an unknown host: %d %s", b.Status(), b.Path())
	}
}
