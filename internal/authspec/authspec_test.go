package authspec_test

import (
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/authspec"
	"github.com/finsvc/finsvc/openapi"
)

func load(t *testing.T) *openapi3.T {
	t.Helper()
	spec, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// The committed spec declares a policy for every operation, and the policy
// carries what the spec says.
func TestPolicyOfTheSpec(t *testing.T) {
	pol, err := authspec.FromSpec(load(t))
	if err != nil {
		t.Fatal(err)
	}
	for op, want := range map[string]auth.Rule{
		"listUsers":      {Action: auth.Admin, Scopes: []string{auth.ScopeUsersRead}, Forbidden: "list users"},
		"createClient":   {Action: auth.Write, Scopes: []string{auth.ScopeClientsWrite}},
		"getMe":          {Action: auth.Read},
		"createTemplate": {Action: auth.Admin, Scopes: []string{auth.ScopeTemplatesWrite}},
		"exchangeToken":  {Action: auth.Public},
		"healthz":        {Action: auth.Public},
		"manageApps":     {Action: auth.Admin, Forbidden: "manage developer apps"},
	} {
		got, ok := pol.Rule(op)
		if !ok {
			t.Errorf("%s: no rule", op)
			continue
		}
		if got.Action != want.Action || got.Forbidden != want.Forbidden || strings.Join(got.Scopes, " ") != strings.Join(want.Scopes, " ") {
			t.Errorf("%s: %+v, want %+v", op, got, want)
		}
	}
	if n := len(pol.Operations()); n < 50 {
		t.Errorf("%d rules; want every operation", n)
	}
}

// Each way a declaration can be wrong stops the start (Policy is what
// internal/app calls before serving), shown with a throwaway change of the
// in-memory spec.
func TestPolicyRefusesABadDeclaration(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(*openapi3.T)
		want   string
	}{
		"an operation without a policy": {
			func(s *openapi3.T) { delete(s.Paths.Value("/api/1.0/clients").Post.Extensions, openapi.ExtAction) },
			"createClient: no x-finsvc-action",
		},
		"an unknown action": {
			func(s *openapi3.T) { s.Paths.Value("/api/1.0/clients").Post.Extensions[openapi.ExtAction] = "owner" },
			`createClient: x-finsvc-action: unknown action "owner"`,
		},
		"a public operation with a token": {
			func(s *openapi3.T) {
				s.Paths.Value("/healthz").Get.Security = &openapi3.SecurityRequirements{{"oauth2": {}}}
			},
			"healthz: a public operation says so with `security: []`",
		},
		"an operation made public without saying so in security": {
			func(s *openapi3.T) { s.Paths.Value("/api/1.0/clients").Get.Extensions[openapi.ExtAction] = "public" },
			"listClients: a public operation says so with `security: []`",
		},
		"alternative requirements": {
			func(s *openapi3.T) {
				op := s.Paths.Value("/api/1.0/clients").Get
				alt := append(*op.Security, (*op.Security)[0])
				op.Security = &alt
			},
			"listClients: want exactly one security requirement, got 2",
		},
		"an undeclared scope": {
			func(s *openapi3.T) {
				s.Paths.Value("/api/1.0/clients").Get.Security = &openapi3.SecurityRequirements{{"oauth2": {"clients:admin"}}}
			},
			`listClients: the scope "clients:admin" is not declared`,
		},
		"a scope only in the spec": {
			func(s *openapi3.T) {
				s.Components.SecuritySchemes["oauth2"].Value.Flows.AuthorizationCode.Scopes["invoices:read"] = "read invoices"
			},
			"only in the spec [invoices:read], only in auth.AllScopes []",
		},
		"a scope only in auth.AllScopes": {
			func(s *openapi3.T) {
				delete(s.Components.SecuritySchemes["oauth2"].Value.Flows.AuthorizationCode.Scopes, auth.ScopeUsersWrite)
			},
			"only in auth.AllScopes [users:write]",
		},
		"a page named like an operation": {
			func(s *openapi3.T) {
				s.Extensions[openapi.ExtPages].(map[string]any)["listUsers"] = map[string]any{"action": "admin"}
			},
			"listUsers: two rules",
		},
	} {
		t.Run(name, func(t *testing.T) {
			spec := load(t)
			tc.change(spec)
			_, err := authspec.FromSpec(spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
