package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
)

// A revocation of a token that is already revoked (or unknown) answers 200
// without writing anything: that 200 confirms an earlier revocation, so it
// waits for the durability barrier (db.WaitDurable), and when the barrier
// does not complete (the synchronous standby does not confirm) the answer
// is 503 temporarily_unavailable with Retry-After, never 200.
func TestRevokeAgainWaitsUntilDurable(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "admin")
		var barriers atomic.Int64
		var fail atomic.Bool
		s.DB.SetDurableFault(func(context.Context) error {
			barriers.Add(1)
			if fail.Load() {
				return errors.New("the synchronous standby did not confirm")
			}
			return nil
		})
		t.Cleanup(func() { s.DB.SetDurableFault(nil) })

		_, refresh := o.tokens(t)
		revoke := url.Values{"token": {refresh}, "client_id": {o.clientID}, "client_secret": {o.secret}}
		if r := o.post(t, "/api/oauth/revoke", revoke, reqStyle{}); r.Code != http.StatusOK {
			t.Fatalf("revoke: %d %v", r.Code, r.Body)
		}
		before := barriers.Load()
		if r := o.post(t, "/api/oauth/revoke", revoke, reqStyle{}); r.Code != http.StatusOK {
			t.Fatalf("revoke again: %d %v", r.Code, r.Body)
		}
		if n := barriers.Load() - before; n != 1 {
			t.Fatalf("revoking a revoked token ran %d barriers; want 1", n)
		}

		fail.Store(true)
		r := o.post(t, "/api/oauth/revoke", revoke, reqStyle{})
		expectOAuthError(t, r, http.StatusServiceUnavailable, "temporarily_unavailable")
		wantRetryAfter(t, "revoke again, barrier failed", r.Resp.Header)
		unknown := url.Values{"token": {"ory_rt_unknown.token"}, "client_id": {o.clientID}, "client_secret": {o.secret}}
		expectOAuthError(t, o.post(t, "/api/oauth/revoke", unknown, reqStyle{}), http.StatusServiceUnavailable, "temporarily_unavailable")

		fail.Store(false)
		if r := o.post(t, "/api/oauth/revoke", revoke, reqStyle{}); r.Code != http.StatusOK {
			t.Fatalf("revoke again once the barrier completes: %d %v", r.Code, r.Body)
		}
	})
}
