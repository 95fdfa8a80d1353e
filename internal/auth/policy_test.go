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
		{Operation: "exchangeToken", Action: auth.Public},
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
		op   auth.Op
		role bool   // PermitRole's answer
		want string // Permit's refusal, "" when allowed
	}{
		{viewer, auth.OpListUsers, false, "role viewer may not list users"},
		{admin, auth.OpListUsers, true, ""},
		{viewer, auth.OpCreateClient, false, "role viewer may not perform this action"},
		{member, auth.OpCreateClient, true, "token lacks the clients:write scope"},
		{member, auth.OpGetMe, true, ""},
		{&auth.Principal{Role: "owner"}, auth.OpGetMe, false, "role owner may not perform this action"},
		{nil, auth.OpExchangeToken, true, ""},
		{nil, auth.OpGetMe, false, "authentication required"},
		{member, auth.PageManageApps, false, "role member may not manage developer apps"},
		{admin, auth.OpDeleteClient, false, "no rule for the operation deleteClient"},
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
		case tc.want != "" && tc.op != auth.OpDeleteClient && !apperr.Is(err, apperr.Forbidden) && !apperr.Is(err, apperr.Unauthenticated):
			t.Errorf("Permit(%v, %s) = %v: not a 403 or 401", tc.p, tc.op, err)
		}
	}
}

// Complete holds only when the policy's rules and the generated Ops are the
// same list: a missing rule and a rule no Op names both fail it.
func TestPolicyComplete(t *testing.T) {
	var all []auth.Rule
	for _, op := range auth.AllOps {
		all = append(all, auth.Rule{Operation: op.String(), Action: auth.Read})
	}
	pol, err := auth.NewPolicy(all)
	if err != nil {
		t.Fatal(err)
	}
	if err := pol.Complete(); err != nil {
		t.Fatalf("every Op has a rule: %v", err)
	}
	pol, err = auth.NewPolicy(all[1:])
	if err != nil {
		t.Fatal(err)
	}
	if err := pol.Complete(); err == nil || !strings.Contains(err.Error(), "no rule for ["+auth.AllOps[0].String()+"]") {
		t.Errorf("a missing rule: %v", err)
	}
	pol, err = auth.NewPolicy(append(all, auth.Rule{Operation: "launchRockets", Action: auth.Admin}))
	if err != nil {
		t.Fatal(err)
	}
	if err := pol.Complete(); err == nil || !strings.Contains(err.Error(), "launchRockets") {
		t.Errorf("a rule no Op names: %v", err)
	}
	if !(auth.Op{}).IsZero() || auth.OpGetMe.IsZero() || auth.OpGetMe.String() != "getMe" {
		t.Error("Op's zero value or name")
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
