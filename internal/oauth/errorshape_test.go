package oauth_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/ratelimit"
	"github.com/finsvc/finsvc/internal/testdb"
)

// rfc6749 checks that r is an RFC 6749 error with status and code: error
// and error_description, uncached (the validating transport has checked
// it against the operation's declared response).
func rfc6749(t *testing.T, what string, r *http.Response, status int, code string) map[string]any {
	t.Helper()
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("%s: %d %s is not JSON", what, r.StatusCode, b)
	}
	if r.StatusCode != status || body["error"] != code {
		t.Fatalf("%s: %d %s, want %d with error %s", what, r.StatusCode, b, status, code)
	}
	if d, _ := body["error_description"].(string); d == "" {
		t.Fatalf("%s: no error_description: %s", what, b)
	}
	if r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("Pragma") != "no-cache" {
		t.Fatalf("%s: Cache-Control %q, Pragma %q", what, r.Header.Get("Cache-Control"), r.Header.Get("Pragma"))
	}
	return body
}

// Every error of the token and revocation endpoints is RFC 6749's, also
// those answered before their handlers run: an unknown host, a body over
// the limit, the client address's and the tenant's rate limits, a
// database outage while resolving the tenant, and a body the endpoint
// cannot read. The 413 and 429 keep the error format's fields that 1.0.0
// declared for them.
func TestOAuthEndpointErrorShapes(t *testing.T) {
	const burst = 3
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			setup := func(c *config.Config) {
				c.TrustProxy = true
				c.BodyLimit = 2 << 10
				c.RateLimitRPS, c.RateLimitBurst = 0.001, burst
				c.RateLimitAddressRPS, c.RateLimitAddressBurst = 0.001, burst
			}
			cfg := config.Default()
			setup(cfg)
			l, err := ratelimit.New(cfg, testdb.Logger())
			if err != nil {
				t.Fatal(err)
			}
			d := testdb.Open(t, dialect)
			s := newServer(t, serverOpt{logger: testLogger(), opts: []apitest.Option{
				apitest.WithDB(d), apitest.WithConfig(setup), apitest.WithApp(app.WithLimiter(l)),
			}})
			o := s.org(t, "acme", "admin")
			post := func(host, addr, path, ct, body string) *http.Response {
				t.Helper()
				req, _ := http.NewRequest("POST", o.Server.URL+path, strings.NewReader(body))
				req.Header.Set("Content-Type", ct)
				req.Header.Set("X-Forwarded-For", addr)
				resp, err := (&http.Client{Transport: &apitest.ValidatingTransport{T: t, Host: host}}).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				return resp
			}
			form := "application/x-www-form-urlencoded"
			creds := url.Values{"client_id": {o.clientID}, "client_secret": {o.secret}}
			for i, path := range []string{"/api/oauth/token", "/api/oauth/revoke"} {
				addr := []string{"192.0.2.1", "192.0.2.2"}[i]
				rfc6749(t, path+" at an unknown host", post("nobody."+s.Config.BaseDomain, addr, path, form, "grant_type=refresh_token"),
					http.StatusNotFound, "invalid_request")
				b := rfc6749(t, path+" with a large body", post(o.Host, addr, path, form, "token="+strings.Repeat("x", 4<<10)),
					http.StatusRequestEntityTooLarge, "invalid_request")
				if b["code"] != "payload_too_large" || b["message"] == "" {
					t.Fatalf("%s 413 without the error format's fields: %v", path, b)
				}
				rfc6749(t, path+" with a body of another type", post(o.Host, addr, path, "application/json", `["x"]`),
					http.StatusBadRequest, "invalid_request")
			}

			// Failed client authentications from one address: burst
			// invalid_client, then 429 before any work.
			bogus := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"}, "client_id": {o.clientID}, "client_secret": {"wrong"}}
			for range burst {
				rfc6749(t, "bogus credentials", post(o.Host, "203.0.113.9", "/api/oauth/token", form, bogus.Encode()), http.StatusUnauthorized, "invalid_client")
			}
			r := post(o.Host, "203.0.113.9", "/api/oauth/revoke", form, url.Values{"token": {"x"}, "client_id": {o.clientID}, "client_secret": {o.secret}}.Encode())
			b := rfc6749(t, "a spent address", r, http.StatusTooManyRequests, "temporarily_unavailable")
			if r.Header.Get("Retry-After") == "" || b["code"] != "rate_limited" {
				t.Fatalf("429 of a spent address: Retry-After %q, body %v", r.Header.Get("Retry-After"), b)
			}

			// The tenant's OAuth budget: authenticated clients spend it,
			// whatever the grant's outcome.
			grant := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"unknown"}}
			for k, v := range creds {
				grant[k] = v
			}
			var last *http.Response
			for i := range burst + 1 {
				last = post(o.Host, "198.51.100.20", "/api/oauth/token", form, grant.Encode())
				if i < burst {
					rfc6749(t, "unknown refresh token", last, http.StatusBadRequest, "invalid_grant")
				}
			}
			if b := rfc6749(t, "a spent tenant", last, http.StatusTooManyRequests, "temporarily_unavailable"); last.Header.Get("RateLimit-Remaining") != "0" || b["code"] != "rate_limited" {
				t.Fatalf("429 of a spent tenant: RateLimit-Remaining %q, body %v", last.Header.Get("RateLimit-Remaining"), b)
			}

			// The database gone while the host is resolved (the harness's
			// resolver does not cache).
			testdb.TakeDown(t, d)
			for _, path := range []string{"/api/oauth/token", "/api/oauth/revoke"} {
				r := post(o.Host, "198.51.100.30", path, form, grant.Encode())
				rfc6749(t, path+" during an outage", r, http.StatusServiceUnavailable, "temporarily_unavailable")
				if r.Header.Get("Retry-After") == "" {
					t.Fatalf("%s 503 without Retry-After", path)
				}
			}
		})
	}
}
