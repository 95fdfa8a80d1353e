package auth_test

import (
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
)

func TestPolicyDecides(t *testing.T) {
	pol, err := auth.NewPolicy([]auth.Rule{
		{Operation: "listUsers", Action: auth.Admin, Scopes: []string{auth.ScopeUsersRead}, Forbidden: "list users"},
		{Operation: "createClient", Action: auth.Write, Scopes: []string{auth.ScopeClientsWrite}},
		{Operation: "getMe", Action: auth.Read},
		{Operation: "healthz", Action: auth.Public},
		{Operation: "manageApps", Action: auth.Admin, Forbidden: "manage developer apps", Page: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	viewer := &auth.Principal{Role: auth.RoleViewer, Scopes: auth.AllScopes}
	member := &auth.Principal{Role: auth.RoleMember, Scopes: []string{auth.ScopeClientsRead}}
	admin := &auth.Principal{Role: auth.RoleAdmin, Scopes: auth.AllScopes}
	for _, tc := range []struct {
		p    *auth.Principal
		op   string
		role bool   // PermitRole's answer
		want string // Permit's refusal, "" when allowed
	}{
		{viewer, "listUsers", false, "role viewer may not list users"},
		{admin, "listUsers", true, ""},
		{viewer, "createClient", false, "role viewer may not perform this action"},
		{member, "createClient", true, "token lacks the clients:write scope"},
		{member, "getMe", true, ""},
		{&auth.Principal{Role: "owner"}, "getMe", false, "role owner may not perform this action"},
		{nil, "healthz", true, ""},
		{nil, "getMe", false, "authentication required"},
		{member, "manageApps", false, "role member may not manage developer apps"},
		{admin, "launchRockets", false, "no rule for the operation launchRockets"},
	} {
		if got := pol.Allows(tc.p, tc.op); got != tc.role {
			t.Errorf("Allows(%v, %s) = %v", tc.p, tc.op, got)
		}
		err := pol.Permit(tc.p, tc.op)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Permit(%v, %s): %v", tc.p, tc.op, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Permit(%v, %s) = %v, want %q", tc.p, tc.op, err, tc.want)
		case tc.want != "" && tc.op != "launchRockets" && !apperr.Is(err, apperr.Forbidden) && !apperr.Is(err, apperr.Unauthenticated):
			t.Errorf("Permit(%v, %s) = %v: not a 403 or 401", tc.p, tc.op, err)
		}
	}
	if err := pol.Require("getMe", "manageApps"); err != nil {
		t.Error(err)
	}
	if err := pol.Require("getMe", "deleteEverything"); err == nil || !strings.Contains(err.Error(), "deleteEverything") {
		t.Errorf("Require of a missing rule: %v", err)
	}
}

func TestNewPolicyRefusesBadRules(t *testing.T) {
	for name, rules := range map[string][]auth.Rule{
		"unnamed":           {{Action: auth.Read}},
		"repeated":          {{Operation: "a"}, {Operation: "a"}},
		"unknown action":    {{Operation: "a", Action: auth.Action(9)}},
		"public with scope": {{Operation: "a", Action: auth.Public, Scopes: []string{"x"}}},
	} {
		if _, err := auth.NewPolicy(rules); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestActionNames(t *testing.T) {
	for _, a := range []auth.Action{auth.Read, auth.Write, auth.Admin, auth.Public} {
		got, err := auth.ParseAction(a.String())
		if err != nil || got != a {
			t.Errorf("%v: %v %v", a, got, err)
		}
	}
	if _, err := auth.ParseAction("owner"); err == nil {
		t.Error("owner parsed")
	}
}
