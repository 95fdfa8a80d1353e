package oauth_test

import (
	"fmt"
	"sync"
	"testing"
)

// race runs n copies of fn at once and returns their statuses.
func race(n int, fn func() tokenResult) []tokenResult {
	var wg sync.WaitGroup
	start := make(chan struct{})
	out := make([]tokenResult, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i] = fn()
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// exactlyOneWins checks the answers of a race: one success and
// invalid_grant for every other request. It returns the success.
func exactlyOneWins(t *testing.T, what string, res []tokenResult) *tokenResult {
	t.Helper()
	var win *tokenResult
	for i, r := range res {
		switch {
		case r.Code == 200:
			if win != nil {
				t.Fatalf("%s: two requests succeeded", what)
			}
			win = &res[i]
		case r.Code == 400 && r.str("error") == "invalid_grant":
		default:
			t.Errorf("%s: unexpected answer %d %v", what, r.Code, r.Body)
		}
	}
	if win == nil {
		t.Fatalf("%s: no request succeeded", what)
	}
	return win
}

// familyRevoked fails unless the tokens a race winner got are dead: a code
// or refresh token presented more than once revokes its whole family,
// whatever the timing of the presentations.
func familyRevoked(t *testing.T, o *org, what string, win *tokenResult) {
	t.Helper()
	if st, _ := o.me(t, win.str("access_token")); st != 401 {
		t.Errorf("%s: the winner's access token still works after reuse (/me = %d)", what, st)
	}
	if r := o.token(t, o.refreshGrant(win.str("refresh_token")), reqStyle{}); r.Code != 400 || r.str("error") != "invalid_grant" {
		t.Errorf("%s: the winner's refresh token still works after reuse: %d %v", what, r.Code, r.Body)
	}
}

// TestConcurrentCodeExchange: simultaneous exchanges of one code (2 and
// 10 at once, a few rounds each): exactly one gets tokens, and they are
// revoked because the code was presented more than once.
func TestConcurrentCodeExchange(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "admin")
		for _, n := range []int{2, 10} {
			for round := range 3 {
				what := fmt.Sprintf("%d exchanges, round %d", n, round)
				code := o.code(t, o.authParams("state-race-"+randHex(3)))
				res := race(n, func() tokenResult { return o.token(t, o.codeGrant(code), reqStyle{json: round%2 == 0}) })
				familyRevoked(t, o, what, exactlyOneWins(t, what, res))
			}
		}
	})
}

// TestConcurrentRefresh: simultaneous refreshes with one refresh token (2
// and 10 at once): one rotation succeeds and the family is revoked.
func TestConcurrentRefresh(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "admin")
		for _, n := range []int{2, 10} {
			for round := range 3 {
				what := fmt.Sprintf("%d refreshes, round %d", n, round)
				access, refresh := o.tokens(t)
				res := race(n, func() tokenResult { return o.token(t, o.refreshGrant(refresh), reqStyle{}) })
				familyRevoked(t, o, what, exactlyOneWins(t, what, res))
				if st, _ := o.me(t, access); st != 401 {
					t.Errorf("%s: the first access token still works (/me = %d)", what, st)
				}
			}
		}
	})
}

// TestConcurrentRefreshChains: refreshes of distinct chains at once, beside
// a token presented several times at once. Every chain rotates (its old
// access token dies, the new one works), exactly one presentation of the
// shared token wins and its family is revoked, and the other families are
// untouched; reusing one chain's rotated token later revokes that chain
// alone.
func TestConcurrentRefreshChains(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "admin")
		const chains, reusers, rounds = 8, 4, 3
		type chain struct{ access, refresh, used string }
		cs := make([]chain, chains)
		for i := range cs {
			cs[i].access, cs[i].refresh = o.tokens(t)
		}
		for round := range rounds {
			what := fmt.Sprintf("round %d", round)
			_, shared := o.tokens(t)
			next := make([]tokenResult, chains)
			reuse := make([]tokenResult, reusers)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range chains + reusers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					if i < chains {
						next[i] = o.token(t, o.refreshGrant(cs[i].refresh), reqStyle{})
					} else {
						reuse[i-chains] = o.token(t, o.refreshGrant(shared), reqStyle{})
					}
				}()
			}
			close(start)
			wg.Wait()
			familyRevoked(t, o, what+", reused token", exactlyOneWins(t, what+", reused token", reuse))
			for i, r := range next {
				if r.Code != 200 {
					t.Fatalf("%s, chain %d: refresh = %d %v", what, i, r.Code, r.Body)
				}
				if st, _ := o.me(t, cs[i].access); st != 401 {
					t.Errorf("%s, chain %d: the rotated access token still works (/me = %d)", what, i, st)
				}
				cs[i] = chain{access: r.str("access_token"), refresh: r.str("refresh_token"), used: cs[i].refresh}
				if st, _ := o.me(t, cs[i].access); st != 200 {
					t.Errorf("%s, chain %d: the new access token is refused (/me = %d)", what, i, st)
				}
			}
		}
		// Chain 0's rotated token presented again: chain 0 is revoked, the
		// others keep working.
		expectOAuthError(t, o.token(t, o.refreshGrant(cs[0].used), reqStyle{}), 400, "invalid_grant")
		familyRevoked(t, o, "chain 0 after reuse", &tokenResult{Body: map[string]any{"access_token": cs[0].access, "refresh_token": cs[0].refresh}})
		for i := 1; i < chains; i++ {
			if st, _ := o.me(t, cs[i].access); st != 200 {
				t.Errorf("chain %d: access token refused after chain 0's reuse (/me = %d)", i, st)
			}
			if r := o.token(t, o.refreshGrant(cs[i].refresh), reqStyle{}); r.Code != 200 {
				t.Errorf("chain %d: refresh after chain 0's reuse = %d %v", i, r.Code, r.Body)
			}
		}
	})
}
