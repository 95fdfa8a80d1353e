package oauth

import (
	"fmt"
	"sync"

	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/openapi"
)

// scopeDescriptions are the one-line descriptions of the scopes, read from
// the one place they are written: the spec's oauth2 security scheme (what
// integrators read is what the consent and app pages show).
var scopeDescriptions = sync.OnceValues(func() (map[string]string, error) {
	spec, err := openapi.Shared()
	if err != nil {
		return nil, err
	}
	ref := spec.Components.SecuritySchemes["oauth2"]
	if ref == nil || ref.Value == nil || ref.Value.Flows == nil || ref.Value.Flows.AuthorizationCode == nil {
		return nil, fmt.Errorf("oauth: the spec has no oauth2 authorization-code flow")
	}
	d := ref.Value.Flows.AuthorizationCode.Scopes
	for _, sc := range auth.AllScopes {
		if d[sc] == "" {
			return nil, fmt.Errorf("oauth: the spec does not describe the scope %q", sc)
		}
	}
	return d, nil
})

// ScopeDescription is the spec's one-line description of scope ("" for
// an unknown scope).
func ScopeDescription(scope string) string {
	d, _ := scopeDescriptions()
	return d[scope]
}

// scopeItem is a scope as the pages show it: its name and what it grants.
type scopeItem struct{ Name, Description string }

func describeScopes(names []string) []scopeItem {
	out := make([]scopeItem, len(names))
	for i, n := range names {
		out[i] = scopeItem{Name: n, Description: ScopeDescription(n)}
	}
	return out
}
