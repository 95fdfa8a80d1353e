package httpapi_test

import (
	"testing"

	"github.com/finsvc/finsvc/internal/apitest"
)

// The published contract deprecates nothing yet, so the real server sends
// no deprecation headers (deprecation_internal_test.go deprecates operations
// in a copy of the spec).
func TestNoDeprecationHeadersOnCurrentOperations(t *testing.T) {
	env := apitest.New(t)
	acme := env.Tenant("acme")
	for _, path := range []string{"/api/1.0/me", "/api/1.0/clients"} {
		resp := acme.Do("GET", path, acme.AdminToken(), nil).Status(t, 200)
		for _, k := range []string{"Deprecation", "Sunset"} {
			if v := resp.Header.Values(k); v != nil {
				t.Errorf("GET %s: %s = %q", path, k, v)
			}
		}
	}
}
