package oauth_test

import (
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
)

func wantRetryAfter(t *testing.T, what string, h http.Header) {
	t.Helper()
	if n, err := strconv.Atoi(h.Get("Retry-After")); err != nil || n <= 0 {
		t.Errorf("%s: Retry-After = %q, want seconds", what, h.Get("Retry-After"))
	}
}

// TestDatabaseOutage: with the database gone, the token and revocation
// endpoints answer 503 temporarily_unavailable with Retry-After, and the
// authorization pages a "service unavailable" page, where they used to
// say invalid_client or "this app is unknown". On PostgreSQL the database
// then comes back and the same requests succeed.
func TestDatabaseOutage(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			d := testdb.Open(t, dialect)
			var logs syncBuffer
			s := newServer(t, serverOpt{logger: slog.New(slog.NewJSONHandler(&logs, nil)), opts: []apitest.Option{apitest.WithDB(d),
				// The production resolver caches tenants: during an outage
				// the host still resolves and the OAuth code answers.
				apitest.WithApp(app.WithTenants(tenant.NewStore(d)))}})
			o := s.org(t, "acme", "admin")
			_, refresh := o.tokens(t)
			code := o.code(t, o.authParams("state-outage-1"))
			c := o.browser(t)
			o.login(t, c)
			params := o.authParams("state-outage-2")
			params.Set("scope", "acts:write") // not consented yet: a consent page
			consent := do(t, c, "GET", o.Server.URL+"/oauth/authorize?"+params.Encode(), nil)
			if consent.Code != http.StatusOK {
				t.Fatalf("consent page: %d", consent.Code)
			}
			consentForm := hiddenFields(consent.Body)
			consentForm.Set("decision", "allow")

			restore := testdb.TakeDown(t, d)

			for name, form := range map[string]url.Values{
				"refresh": o.refreshGrant(refresh), "code": o.codeGrant(code),
				"unknown client": {"grant_type": {"refresh_token"}, "client_id": {"app_nope"}, "client_secret": {"x"}, "refresh_token": {refresh}},
			} {
				for _, st := range []reqStyle{{}, {basic: true}} {
					r := o.token(t, form, st)
					expectOAuthError(t, r, http.StatusServiceUnavailable, "temporarily_unavailable")
					wantRetryAfter(t, "token "+name, r.Resp.Header)
				}
			}
			r := o.post(t, "/api/oauth/revoke", url.Values{"client_id": {o.clientID}, "client_secret": {o.secret}, "token": {refresh}}, reqStyle{})
			expectOAuthError(t, r, http.StatusServiceUnavailable, "temporarily_unavailable")
			wantRetryAfter(t, "revoke", r.Resp.Header)

			for what, p := range map[string]page{
				"GET /oauth/authorize":            do(t, c, "GET", o.Server.URL+"/oauth/authorize?"+params.Encode(), nil),
				"GET /oauth/authorize signed out": do(t, o.browser(t), "GET", o.Server.URL+"/oauth/authorize?"+params.Encode(), nil),
				"POST /oauth/authorize":           do(t, c, "POST", o.Server.URL+"/oauth/authorize", consentForm),
			} {
				if p.Code != http.StatusServiceUnavailable || p.Location != "" || !strings.Contains(p.Body, "Service unavailable") || strings.Contains(p.Body, "unknown") {
					t.Errorf("%s during the outage: %d %q %s", what, p.Code, p.Location, p.Body)
				}
			}
			req, _ := http.NewRequest("GET", o.Server.URL+"/oauth/authorize?"+params.Encode(), nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			wantRetryAfter(t, "authorize page", resp.Header)
			// The log says what happened, not what fosite called it.
			lines := 0
			for _, l := range strings.Split(logs.String(), "\n") {
				if !strings.Contains(l, "database unavailable") {
					continue
				}
				lines++
				if strings.Contains(l, "invalid_client") || strings.Contains(l, `"error":"temporarily_unavailable"`) {
					t.Errorf("an outage logged as an OAuth error: %s", l)
				}
			}
			if lines == 0 {
				t.Error("the outage was not logged")
			}

			if restore == nil {
				return
			}
			restore()
			// The pool reconnects: the refresh token, never consumed by the
			// refused requests, still works.
			var last tokenResult
			for range 50 {
				if last = o.token(t, o.refreshGrant(refresh), reqStyle{}); last.Code == http.StatusOK {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if last.Code != http.StatusOK {
				t.Fatalf("refresh after the database came back: %d %v", last.Code, last.Body)
			}
			if p := do(t, c, "POST", o.Server.URL+"/oauth/authorize", consentForm); p.Code != http.StatusFound || !strings.Contains(p.Location, "code=") {
				t.Fatalf("consent after the database came back: %d %q", p.Code, p.Location)
			}
		})
	}
}
