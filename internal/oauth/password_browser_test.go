package oauth_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/web"
	"github.com/finsvc/finsvc/internal/web/browsertest"
)

// TestBrowserOneTimePassword drives Chromium through the one-time flow:
// sign in with a generated password → "choose your password" before
// anything else (the console sends back there) → the console; the
// one-time password then fails at the sign-in page.
func TestBrowserOneTimePassword(t *testing.T) {
	browsertest.Chromium(t)
	s := newServer(t, serverOpt{})
	o := s.org(t, "acme", auth.RoleAdmin)
	u, otp, err := s.svcUsers().CreateWithPassword(o.Ctx, "ola@acme.example.com", "Ola", auth.RoleMember, "")
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := url.Parse(s.Server.URL)
	base := "http://acme.localhost:" + srv.Port()
	b := browsertest.New(t, browsertest.Options{})

	signIn := func(password string) {
		t.Helper()
		b.Open(base + "/login")
		b.Fill("#email", u.Email)
		b.Fill("#password", password)
		b.Submit("#signin")
	}
	signIn(otp)
	if p := b.Path(); !strings.HasPrefix(p, web.PasswordPath) {
		t.Fatalf("after signing in with the one-time password: %s, want %s", p, web.PasswordPath)
	}
	if !strings.Contains(b.Text("#required"), "one-time password") || b.Count("#current_password") != 0 {
		t.Fatalf("the page does not ask to choose a password: %q", b.Text("main"))
	}
	b.Shoot("choose-password")
	// Nothing else first: the console sends back.
	b.Open(base + "/console/webhooks")
	if p := b.Path(); !strings.HasPrefix(p, web.PasswordPath+"?next=") {
		t.Fatalf("the console before choosing: %s", p)
	}
	// A refused password says why, on the page.
	b.Allow(base + web.PasswordPath)
	b.Fill("#new_password", "Qwerty123456")
	b.Fill("#password_confirm", "Qwerty123456")
	b.Submit("#save-password")
	if got := b.Text("#error"); !strings.Contains(got, "commonly used password") {
		t.Fatalf("a common password: %q", got)
	}
	b.Fill("#new_password", "cantaloupe in a red wheelbarrow")
	b.Fill("#password_confirm", "cantaloupe in a red wheelbarrow")
	b.Submit("#save-password")
	if p := b.Path(); p != "/console/webhooks" {
		t.Fatalf("after choosing: %s, want the console", p)
	}
	if got := b.Text("#who"); !strings.Contains(got, u.Email) {
		t.Fatalf("header: %q", got)
	}
	b.Submit("#logout")

	// The one-time password is spent.
	b.Allow(base + "/login")
	signIn(otp)
	if got := b.Text("#error"); !strings.Contains(got, "Invalid email or password") || b.Path() != "/login" {
		t.Fatalf("the one-time password again: %s %q", b.Path(), got)
	}
	signIn("cantaloupe in a red wheelbarrow")
	if p := b.Path(); p != "/console/webhooks" {
		t.Fatalf("the chosen password: %s", p)
	}
}
