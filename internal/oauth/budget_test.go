package oauth_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/ratelimit"
	"github.com/finsvc/finsvc/internal/testdb"
)

// Addresses of the test's clients, told apart by X-Forwarded-For behind a
// trusted proxy (every request really comes from 127.0.0.1).
const (
	attacker = "203.0.113.66"
	victim   = "198.51.100.7"
)

// sendFrom sends req from addr through the validating transport.
func sendFrom(t *testing.T, o *org, addr string, req *http.Request) *http.Response {
	t.Helper()
	req.Header.Set("X-Forwarded-For", addr)
	resp, err := o.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func apiFrom(t *testing.T, o *org, addr, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", o.Server.URL+"/api/1.0/me", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	return sendFrom(t, o, addr, req)
}

func tokenFrom(t *testing.T, o *org, addr string, form url.Values) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", o.Server.URL+"/api/oauth/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return sendFrom(t, o, addr, req)
}

// count tallies the statuses of n calls of fn.
func count(n int, fn func() *http.Response) map[int]int {
	m := map[int]int{}
	for range n {
		m[fn().StatusCode]++
	}
	return m
}

// Finding 1 of the security review: 160 requests with a garbage bearer
// token, or with bogus client credentials, used to spend the tenant's budget
// and leave its real admin and integrations at 429. Failed authentications
// now spend the client address's budget, never the tenant's.
func TestFailedAuthenticationSpendsTheAddressNotTheTenant(t *testing.T) {
	const burst = 5
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			setup := func(c *config.Config) {
				c.TrustProxy = true
				c.RateLimitRPS, c.RateLimitBurst = 0.001, burst
				c.RateLimitAddressRPS, c.RateLimitAddressBurst = 0.001, burst
			}
			cfg := config.Default()
			setup(cfg)
			l, err := ratelimit.New(cfg, testdb.Logger())
			if err != nil {
				t.Fatal(err)
			}
			s := newServer(t, serverOpt{logger: testLogger(), opts: []apitest.Option{
				apitest.WithDB(testdb.Open(t, dialect)),
				apitest.WithConfig(setup),
				apitest.WithApp(app.WithLimiter(l)),
			}})
			o := s.org(t, "acme", "admin")
			// The code flow: two authorization-page requests from the
			// test's own address and one code exchange (the tenant's
			// "oauth" budget: 1 of 5 spent).
			access, refresh := o.tokens(t)

			// A flood of garbage bearer tokens from one address: burst
			// 401s, then 429s before any token lookup.
			got := count(4*burst, func() *http.Response { return apiFrom(t, o, attacker, "garbage") })
			if got[http.StatusUnauthorized] != burst || got[http.StatusTooManyRequests] != 3*burst {
				t.Fatalf("garbage tokens from one address: %v; want %d×401 then 429s", got, burst)
			}
			// The tenant's admin, elsewhere, still has the whole API budget.
			r := apiFrom(t, o, victim, access)
			if r.StatusCode != http.StatusOK {
				t.Fatalf("valid token from another address: %d after the flood", r.StatusCode)
			}
			if rem, _ := strconv.Atoi(r.Header.Get("RateLimit-Remaining")); rem != burst-1 {
				t.Fatalf("tenant API budget RateLimit-Remaining = %q; the flood spent it", r.Header.Get("RateLimit-Remaining"))
			}
			// The flooding address is refused while its budget is spent,
			// whatever it sends.
			if r := apiFrom(t, o, attacker, access); r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
				t.Fatalf("valid token from the spent address: %d (Retry-After %q)", r.StatusCode, r.Header.Get("Retry-After"))
			}

			// Bogus client credentials at the token endpoint, from a
			// second address: the same, and the tenant's refreshes go on.
			bogus := o.refreshGrant(refresh)
			bogus.Set("client_secret", "wrong")
			got = count(4*burst, func() *http.Response { return tokenFrom(t, o, "203.0.113.67", bogus) })
			if got[http.StatusUnauthorized] != burst || got[http.StatusTooManyRequests] != 3*burst {
				t.Fatalf("bogus client credentials: %v; want %d×401 then 429s", got, burst)
			}
			r = tokenFrom(t, o, victim, o.refreshGrant(refresh))
			if r.StatusCode != http.StatusOK {
				t.Fatalf("real refresh after the flood: %d", r.StatusCode)
			}
			if rem, _ := strconv.Atoi(r.Header.Get("RateLimit-Remaining")); rem != burst-2 {
				t.Fatalf("tenant token budget RateLimit-Remaining = %q, want %d (the exchange and this refresh only)", r.Header.Get("RateLimit-Remaining"), burst-2)
			}

			// The authorization pages are limited per address too, with
			// an HTML answer for the browser.
			q := o.authParams("state-" + strings.Repeat("x", 8))
			got = count(burst+1, func() *http.Response {
				req, _ := http.NewRequest("GET", o.Server.URL+"/oauth/authorize?"+q.Encode(), nil)
				return sendFrom(t, o, "203.0.113.68", req)
			})
			if got[http.StatusTooManyRequests] != 1 {
				t.Fatalf("authorization page from one address: %v; want one 429 after %d", got, burst)
			}
		})
	}
}
