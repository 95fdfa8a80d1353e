package oauth_test

import (
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

func exactlyOneWins(t *testing.T, what string, res []tokenResult) {
	t.Helper()
	wins := 0
	for _, r := range res {
		switch {
		case r.Code == 200:
			wins++
		case r.Code == 400 && r.str("error") == "invalid_grant":
		default:
			t.Errorf("%s: unexpected answer %d %v", what, r.Code, r.Body)
		}
	}
	if wins != 1 {
		t.Fatalf("%s: %d requests succeeded, want exactly 1", what, wins)
	}
}

// TestConcurrentCodeExchange: several simultaneous exchanges of one code,
// repeated a few times: exactly one gets tokens each time.
func TestConcurrentCodeExchange(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "admin")
		for round := range 3 {
			code := o.code(t, o.authParams("state-race-"+randHex(3)))
			res := race(6, func() tokenResult { return o.token(t, o.codeGrant(code), reqStyle{json: round%2 == 0}) })
			exactlyOneWins(t, "code exchange", res)
		}
	})
}

// TestConcurrentRefresh: simultaneous refreshes with one refresh token:
// exactly one rotation succeeds.
func TestConcurrentRefresh(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "admin")
		for range 3 {
			_, refresh := o.tokens(t)
			res := race(6, func() tokenResult { return o.token(t, o.refreshGrant(refresh), reqStyle{}) })
			exactlyOneWins(t, "refresh", res)
		}
	})
}
