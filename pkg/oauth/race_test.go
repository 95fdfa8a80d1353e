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
