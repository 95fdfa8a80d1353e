package oauth_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/oauth"
	"github.com/finsvc/finsvc/internal/oauth/store"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *fakeClock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

var (
	shownSecretRE = regexp.MustCompile(`id="client_secret">([^<]+)<`)
	untilRE       = regexp.MustCompile(`keeps working until (\d{4}-\d\d-\d\d \d\d:\d\d) UTC`)
)

// TestSecretRotationOverlap: after a rotation on the developer page, the
// token and revocation endpoints take the old secret as well as the new
// one for the chosen window, which the page shows; after the window, or at
// once after "End overlap now", the old one is invalid_client. The
// previous secret is stored as a digest only.
func TestSecretRotationOverlap(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		clock := &fakeClock{t: time.Now()}
		oauth.SetClock(s.svc, clock.now)
		o := s.org(t, "acme", auth.RoleAdmin)
		_, refresh := o.tokens(t)
		c := o.browser(t)
		o.login(t, c)
		apps := o.Server.URL + "/developer/my-apps"
		rotate := func(overlap string) (secret string, page string) {
			t.Helper()
			p := do(t, c, "GET", apps, nil)
			form := url.Values{"csrf_token": {csrfOf(t, p.Body)}}
			if overlap != "" {
				form.Set("overlap", overlap)
			}
			if p = do(t, c, "POST", apps+"/"+o.clientID+"/rotate", form); p.Code != http.StatusSeeOther {
				t.Fatalf("rotate: %d %s", p.Code, p.Body)
			}
			p = do(t, c, "GET", apps, nil)
			m := shownSecretRE.FindStringSubmatch(p.Body)
			if m == nil {
				t.Fatalf("no secret shown after the rotation: %s", p.Body)
			}
			return html.UnescapeString(m[1]), p.Body
		}
		// refreshWith refreshes with secret and reports the status (and
		// keeps the new refresh token when it worked).
		refreshWith := func(secret string) tokenResult {
			t.Helper()
			g := o.refreshGrant(refresh)
			g.Set("client_secret", secret)
			r := o.token(t, g, reqStyle{basic: true})
			if r.Code == http.StatusOK {
				refresh = r.str("refresh_token")
			}
			return r
		}
		revokeWith := func(secret string) tokenResult {
			t.Helper()
			return o.post(t, "/api/oauth/revoke", url.Values{"client_id": {o.clientID}, "client_secret": {secret}, "token": {"unknown-" + randHex(8)}}, reqStyle{})
		}

		// The default window: 24 hours, shown on the page.
		old := o.secret
		newSecret, body := rotate("")
		m := untilRE.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("the page does not say until when the old secret works: %s", body)
		}
		until, _ := time.Parse("2006-01-02 15:04", m[1])
		if d := until.Sub(time.Now().UTC()); d < 23*time.Hour+58*time.Minute || d > 24*time.Hour+time.Minute {
			t.Errorf("the old secret works until %s, %s from now; want 24 h", m[1], d)
		}
		var row store.Client
		if err := s.DB.Where("tenant_id = ? AND id = ?", o.Tenant.ID, o.clientID).Take(&row).Error; err != nil {
			t.Fatal(err)
		}
		if row.PreviousSecretHash != store.HashSecret(old) || row.SecretHash != store.HashSecret(newSecret) || strings.Contains(row.PreviousSecretHash, old) {
			t.Fatalf("stored secrets: %+v", row)
		}
		list := do(t, c, "GET", apps, nil).Body
		if !strings.Contains(list, "Previous secret works until") || !strings.Contains(list, "/end-overlap") || strings.Contains(list, newSecret) {
			t.Errorf("the list does not show the overlap, or shows the secret again")
		}

		// Both secrets work in the window, at both endpoints.
		for _, sec := range []string{old, newSecret} {
			if r := refreshWith(sec); r.Code != http.StatusOK {
				t.Fatalf("refresh in the window: %d %v", r.Code, r.Body)
			}
			if r := revokeWith(sec); r.Code != http.StatusOK {
				t.Fatalf("revoke in the window: %d %v", r.Code, r.Body)
			}
		}
		clock.advance(23 * time.Hour)
		if r := refreshWith(old); r.Code != http.StatusOK {
			t.Fatalf("refresh with the old secret an hour before the end: %d %v", r.Code, r.Body)
		}
		// After the window: invalid_client for the old one only.
		clock.advance(time.Hour + time.Minute)
		expectOAuthError(t, refreshWith(old), http.StatusUnauthorized, "invalid_client")
		expectOAuthError(t, revokeWith(old), http.StatusUnauthorized, "invalid_client")
		if r := refreshWith(newSecret); r.Code != http.StatusOK {
			t.Fatalf("refresh with the new secret: %d %v", r.Code, r.Body)
		}
		o.login(t, c) // the clock moved past the session's end
		if strings.Contains(do(t, c, "GET", apps, nil).Body, "/end-overlap") {
			t.Error("the list offers to end an overlap that is over")
		}

		// A second rotation, ended early on the page: the old one fails at
		// once, without the clock moving.
		second, _ := rotate("168h")
		if r := refreshWith(newSecret); r.Code != http.StatusOK {
			t.Fatalf("refresh with the replaced secret in a 7-day window: %d %v", r.Code, r.Body)
		}
		p := do(t, c, "GET", apps, nil)
		if p = do(t, c, "POST", apps+"/"+o.clientID+"/end-overlap", url.Values{"csrf_token": {csrfOf(t, p.Body)}}); p.Code != http.StatusSeeOther {
			t.Fatalf("end overlap: %d", p.Code)
		}
		expectOAuthError(t, refreshWith(newSecret), http.StatusUnauthorized, "invalid_client")
		expectOAuthError(t, revokeWith(newSecret), http.StatusUnauthorized, "invalid_client")
		if r := refreshWith(second); r.Code != http.StatusOK {
			t.Fatalf("refresh with the current secret after ending the overlap: %d %v", r.Code, r.Body)
		}

		// "now": the old secret fails at once, and the page says so.
		third, body := rotate("now")
		if !strings.Contains(body, "The previous secret no longer works") {
			t.Error("the page does not say the old secret stopped working")
		}
		expectOAuthError(t, refreshWith(second), http.StatusUnauthorized, "invalid_client")
		if r := refreshWith(third); r.Code != http.StatusOK {
			t.Fatalf("refresh with the newest secret: %d %v", r.Code, r.Body)
		}
		// A window past the limit is refused on the page.
		p = do(t, c, "GET", apps, nil)
		if p = do(t, c, "POST", apps+"/"+o.clientID+"/rotate", url.Values{"csrf_token": {csrfOf(t, p.Body)}, "overlap": {"721h"}}); p.Code != http.StatusBadRequest || !strings.Contains(p.Body, "overlap") {
			t.Errorf("a 721 h window: %d", p.Code)
		}
	})
}
