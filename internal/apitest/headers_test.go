package apitest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/apitest"
)

// The OAuth and operational endpoints set headers of their own (caching,
// content security, content negotiation); the validating transport fails
// the test on any of them the document does not declare on the response.
// The assertions show the headers were there to be checked.
func TestOperationalHeadersAreDeclared(t *testing.T) {
	env := apitest.New(t, apitest.WithOAuth())
	te := env.Tenant("acme")
	want := func(r *apitest.Response, what string, headers map[string]string) {
		t.Helper()
		for k, v := range headers {
			if got := r.Header.Get(k); !strings.Contains(got, v) {
				t.Errorf("%s → %d: %s = %q, want %q", what, r.Code, k, got, v)
			}
		}
	}
	r := te.Do(http.MethodPost, "/api/oauth/token", "", `{"grant_type":"bogus"}`)
	want(r, "token error", map[string]string{"Cache-Control": "no-store", "Pragma": "no-cache"})
	r = te.Do(http.MethodPost, "/api/oauth/revoke", "", `{"token":"x","client_id":"nobody","client_secret":"y"}`)
	want(r, "revoke error", map[string]string{"Cache-Control": "no-store"})
	r = te.Do(http.MethodGet, "/openapi.yaml", "", nil).Status(t, http.StatusOK)
	want(r, "/openapi.yaml", map[string]string{"Cache-Control": "max-age="})
	r = te.DoHeader(http.MethodGet, "/docs", "", nil, http.Header{"Accept": {"text/html"}}).Status(t, http.StatusOK)
	want(r, "/docs", map[string]string{"Cache-Control": "no-cache", "Content-Security-Policy": "default-src", "X-Content-Type-Options": "nosniff"})
	r = te.DoHeader(http.MethodGet, "/metrics", "", nil, http.Header{"Accept-Encoding": {"gzip"}}).Status(t, http.StatusOK)
	want(r, "/metrics", map[string]string{"Vary": "Accept", "Content-Encoding": "gzip"})
}
