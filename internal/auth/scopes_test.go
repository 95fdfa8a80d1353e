package auth_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/openapi"
)

// TestScopesMatchSpec keeps the scope list equal to
// the spec's oauth2 security scheme, and every scope an operation asks for
// known.
func TestScopesMatchSpec(t *testing.T) {
	spec, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	scheme := spec.Components.SecuritySchemes["oauth2"].Value
	declared := scheme.Flows.AuthorizationCode.Scopes
	if got, want := slices.Sorted(maps.Keys(declared)), slices.Sorted(slices.Values(auth.AllScopes)); !slices.Equal(got, want) {
		t.Fatalf("spec scopes %v, auth.AllScopes %v", got, want)
	}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			if op.Security == nil {
				continue
			}
			for _, req := range *op.Security {
				for _, sc := range req["oauth2"] {
					if _, ok := declared[sc]; !ok {
						t.Errorf("%s %s needs the undeclared scope %q", method, path, sc)
					}
				}
			}
		}
	}
	if users := spec.Paths.Value("/api/1.0/users").Get; users.Security == nil || !slices.Equal((*users.Security)[0]["oauth2"], []string{auth.ScopeUsersRead}) {
		t.Errorf("GET /users security = %v, want users:read", users.Security)
	}
}
