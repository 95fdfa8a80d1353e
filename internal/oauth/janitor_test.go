package oauth_test

import (
	"context"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/oauth"
	"github.com/finsvc/finsvc/internal/oauth/store"
)

// TestJanitorKeepsReuseDetection: after a janitor run within the grace
// period, a replayed used code and a replayed rotated refresh token still
// revoke their families; another tenant's live tokens are untouched; past
// the grace period everything is gone and a replay is a plain
// invalid_grant.
func TestJanitorKeepsReuseDetection(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "admin")
		other := s.org(t, "globex", "admin")
		otherAccess, _ := other.tokens(t)

		// Family 1: a code exchanged once.
		code := o.code(t, o.authParams("state-janitor-1"))
		r := o.token(t, o.codeGrant(code), reqStyle{})
		if r.Code != 200 {
			t.Fatalf("exchange: %d %v", r.Code, r.Body)
		}
		codeAccess := r.str("access_token")
		// Family 2: a refresh token rotated once.
		_, refresh1 := o.tokens(t)
		r = o.token(t, o.refreshGrant(refresh1), reqStyle{})
		if r.Code != 200 {
			t.Fatalf("refresh: %d %v", r.Code, r.Body)
		}
		access2, refresh2 := r.str("access_token"), r.str("refresh_token")

		// Codes have expired (10 minutes), access tokens (1 hour) not.
		j := oauth.NewJanitor(s.DB, nil)
		j.Now = func() time.Time { return time.Now().Add(20 * time.Minute) }
		st, err := j.RunOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.AccessTokens != 0 || st.RefreshTokens != 0 || st.Codes != 0 {
			// Every code issued so far was used: kept for the grace period.
			t.Fatalf("first run purged %+v", st)
		}
		if c, _ := other.me(t, otherAccess); c != 200 {
			t.Fatalf("other tenant's token after the janitor: %d", c)
		}
		if c, _ := o.me(t, access2); c != 200 {
			t.Fatalf("live access token after the janitor: %d", c)
		}

		// Replays still revoke their families.
		expectOAuthError(t, o.token(t, o.codeGrant(code), reqStyle{}), 400, "invalid_grant")
		if c, _ := o.me(t, codeAccess); c != 401 {
			t.Fatalf("access token of a replayed code: /me = %d, want 401", c)
		}
		expectOAuthError(t, o.token(t, o.refreshGrant(refresh1), reqStyle{}), 400, "invalid_grant")
		if c, _ := o.me(t, access2); c != 401 {
			t.Fatalf("family access token after refresh reuse: /me = %d, want 401", c)
		}
		expectOAuthError(t, o.token(t, o.refreshGrant(refresh2), reqStyle{}), 400, "invalid_grant")
		if c, _ := other.me(t, otherAccess); c != 200 {
			t.Fatalf("other tenant's token after the replays: %d", c)
		}

		// Past every lifetime plus the grace period nothing is left.
		j.Now = func() time.Time { return time.Now().Add(s.Config.RefreshTokenTTL + oauth.JanitorGrace + time.Hour) }
		st, err = j.RunOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.Codes == 0 || st.RefreshTokens == 0 || st.AccessTokens == 0 || st.Sessions == 0 {
			t.Fatalf("late run purged %+v", st)
		}
		for _, table := range []string{"oauth_codes", "oauth_pkce", "oauth_access_tokens", "oauth_refresh_tokens", "web_sessions"} {
			var n int64
			if err := s.DB.Table(table).Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%s: %d rows left", table, n)
			}
		}
		expectOAuthError(t, o.token(t, o.refreshGrant(refresh1), reqStyle{}), 400, "invalid_grant")
	})
}

// TestJanitorStartStop: the background loop runs after FirstRun and stops
// on Stop (twice is fine).
func TestJanitorStartStop(t *testing.T) {
	s := newServer(t, serverOpt{})
	o := s.org(t, "acme", "admin")
	o.tokens(t)
	j := oauth.NewJanitor(s.DB, nil)
	j.FirstRun, j.Interval = 0, time.Hour
	j.Now = func() time.Time { return time.Now().Add(2 * s.Config.RefreshTokenTTL) }
	ran := make(chan store.PurgeStats, 1)
	oauth.OnJanitorRun(j, func(st store.PurgeStats, err error) {
		if err != nil {
			t.Errorf("background run: %v", err)
		}
		ran <- st
	})
	j.Start(context.Background())
	st := <-ran
	if st.RefreshTokens != 1 || st.AccessTokens != 1 || st.Codes != 1 {
		t.Fatalf("background run purged %+v", st)
	}
	j.Stop()
	j.Stop()
	oauth.NewJanitor(s.DB, nil).Stop() // never started
}
