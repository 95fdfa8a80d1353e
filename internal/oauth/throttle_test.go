package oauth_test

import (
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/oauth"
	"github.com/finsvc/finsvc/internal/users"
)

// signIn posts the login form for email with a fresh CSRF token.
func signIn(t *testing.T, o *org, c *http.Client, email, password string) page {
	t.Helper()
	p := do(t, c, "GET", o.Server.URL+"/login", nil)
	return do(t, c, "POST", o.Server.URL+"/login", url.Values{
		"csrf_token": {csrfOf(t, p.Body)}, "email": {email}, "password": {password}, "next": {"/account/apps"},
	})
}

func expectStatus(t *testing.T, what string, p page, code int) {
	t.Helper()
	if p.Code != code {
		t.Fatalf("%s: %d, want %d: %.300s", what, p.Code, code, p.Body)
	}
}

// TestLoginThrottle: after LoginMaxFailures wrong passwords for an email,
// the next attempt is refused with 429 even with the right password; other
// emails of the tenant and the same email at another tenant are not
// affected; a sign-in resets the count; after the window it works again.
func TestLoginThrottle(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		var offset atomic.Int64
		oauth.SetClock(s.svc, func() time.Time { return time.Now().Add(time.Duration(offset.Load())) })

		o := s.org(t, "acme", "admin")
		other := s.org(t, "globex", "admin")
		us := users.NewStore(s.DB, users.WithHashParams(apitest.HashParams))
		colleague := "colleague@acme.example.com"
		if _, err := us.Create(o.Ctx, colleague, "Colleague", "viewer", testPassword); err != nil {
			t.Fatal(err)
		}
		// The same email at another tenant.
		if _, err := us.Create(other.Ctx, o.email, "Namesake", "viewer", testPassword); err != nil {
			t.Fatal(err)
		}
		c := o.browser(t)

		// A sign-in resets the count: 4 failures, a success, 4 failures.
		for i := range 2 * (oauth.LoginMaxFailures - 1) {
			expectStatus(t, "colleague, wrong password "+strconv.Itoa(i), signIn(t, o, c, colleague, "wrong password!"), http.StatusUnauthorized)
			if i == oauth.LoginMaxFailures-2 {
				expectStatus(t, "colleague, right password", signIn(t, o, o.browser(t), colleague, testPassword), http.StatusSeeOther)
			}
		}

		for i := range oauth.LoginMaxFailures {
			p := signIn(t, o, c, o.email, "wrong password!")
			expectStatus(t, "wrong password "+strconv.Itoa(i), p, http.StatusUnauthorized)
			if !strings.Contains(p.Body, "Invalid email or password") {
				t.Fatalf("attempt %d: %s", i, p.Body)
			}
		}
		// The 6th attempt is refused without looking at the password, and
		// the email's case does not matter.
		for _, email := range []string{o.email, strings.ToUpper(o.email)} {
			c := o.browser(t)
			p := signIn(t, o, c, email, testPassword)
			expectStatus(t, "right password while throttled", p, http.StatusTooManyRequests)
			if !strings.Contains(p.Body, "Too many sign-in attempts") || strings.Contains(p.Body, "Invalid email or password") {
				t.Fatalf("throttled page: %s", p.Body)
			}
			u, _ := url.Parse(o.Server.URL)
			for _, ck := range c.Jar.Cookies(u) {
				if ck.Name == "finsvc_session" {
					t.Fatal("a throttled attempt signed in")
				}
			}
		}
		// Another email of the tenant and the same email elsewhere are fine.
		expectStatus(t, "colleague", signIn(t, o, o.browser(t), colleague, testPassword), http.StatusSeeOther)
		expectStatus(t, "same email at another tenant", signIn(t, other, other.browser(t), o.email, testPassword), http.StatusSeeOther)

		// Still refused just before the window ends; fine after it.
		offset.Store(int64(oauth.LoginWindow - 5*time.Second))
		expectStatus(t, "before the window ends", signIn(t, o, o.browser(t), o.email, testPassword), http.StatusTooManyRequests)
		offset.Store(int64(oauth.LoginWindow + time.Second))
		expectStatus(t, "after the window", signIn(t, o, o.browser(t), o.email, testPassword), http.StatusSeeOther)
	})
}

// TestLoginThrottleResponse: the 429 page carries Retry-After, and the log
// line about it names neither the email nor the password.
func TestLoginThrottleResponse(t *testing.T) {
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := newServer(t, serverOpt{logger: logger})
	o := s.org(t, "acme", "admin")
	const wrong = "wrong password, quite secret"
	for range oauth.LoginMaxFailures {
		signIn(t, o, o.browser(t), o.email, wrong)
	}
	c := o.browser(t)
	p := do(t, c, "GET", o.Server.URL+"/login", nil)
	req, _ := http.NewRequest("POST", o.Server.URL+"/login", strings.NewReader(url.Values{
		"csrf_token": {csrfOf(t, p.Body)}, "email": {o.email}, "password": {wrong}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("status %d", resp.StatusCode)
	}
	ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || ra <= 0 || ra > int(oauth.LoginWindow/time.Second) {
		t.Fatalf("Retry-After %q", resp.Header.Get("Retry-After"))
	}
	out := logs.String()
	if !strings.Contains(out, "login throttled") {
		t.Fatalf("no throttling log line: %s", out)
	}
	if strings.Contains(out, o.email) || strings.Contains(out, wrong) {
		t.Fatalf("the email or the password is in the log: %s", out)
	}
}
