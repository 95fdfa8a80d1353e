package httpapi

import (
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/authspec"
	"github.com/finsvc/finsvc/openapi"
)

func policyOf(t *testing.T, change func(*openapi3.T)) (*auth.Policy, error) {
	t.Helper()
	spec, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	change(spec)
	return authspec.FromSpec(spec)
}

// edited is pol's rules without drop's and with add, as a policy.
func edited(t *testing.T, pol *auth.Policy, drop string, add *auth.Rule) *auth.Policy {
	t.Helper()
	var rules []auth.Rule
	for _, op := range pol.Operations() {
		if op != drop {
			r, _ := pol.Rule(op)
			rules = append(rules, r)
		}
	}
	if add != nil {
		rules = append(rules, *add)
	}
	p, err := auth.NewPolicy(rules)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// An operation of the server without a policy, or with one the server
// cannot enforce, stops the server from starting (New calls Rules): shown
// with throwaway changes of the in-memory spec.
func TestRulesRefuseAnIncompletePolicy(t *testing.T) {
	pol, err := policyOf(t, func(*openapi3.T) {})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Rules(pol); err != nil {
		t.Fatalf("the real policy: %v", err)
	}

	// No x-finsvc-action: the spec's policy does not load.
	_, err = policyOf(t, func(s *openapi3.T) {
		delete(s.Paths.Value("/api/1.0/acts/{act_uuid}/data/{data_id}").Put.Extensions, openapi.ExtAction)
	})
	if err == nil || !strings.Contains(err.Error(), "putActDataPoint: no x-finsvc-action") {
		t.Fatalf("putActDataPoint without a policy: %v", err)
	}

	// The operation gone from the spec: the spec's policy no longer
	// matches the generated operation names, and does not load; a policy
	// without it (built by hand) leaves a route the server serves
	// unguarded, and the server refuses to start.
	_, err = policyOf(t, func(s *openapi3.T) {
		s.Paths.Value("/api/1.0/acts/{act_uuid}/data/{data_id}").Put = nil
	})
	if err == nil || !strings.Contains(err.Error(), "no rule for [putActDataPoint]") {
		t.Fatalf("a spec without putActDataPoint: %v", err)
	}
	if _, err := Rules(edited(t, pol, "putActDataPoint", nil)); err == nil || !strings.Contains(err.Error(), "PutActDataPoint: no rule in the policy") {
		t.Fatalf("a policy without putActDataPoint: %v", err)
	}

	// A guarded operation the strict server does not serve would be
	// enforced by nobody: the spec with it does not load (no generated
	// name), and a policy with it refuses the start.
	_, err = policyOf(t, func(s *openapi3.T) {
		op := *s.Paths.Value("/api/1.0/clients").Get
		op.OperationID = "launchRockets"
		s.Paths.Set("/api/1.0/rockets", &openapi3.PathItem{Post: &op})
	})
	if err == nil || !strings.Contains(err.Error(), "launchRockets") {
		t.Fatalf("a spec with an operation no name was generated for: %v", err)
	}
	rockets := auth.Rule{Operation: "launchRockets", Action: auth.Admin}
	if _, err := Rules(edited(t, pol, "", &rockets)); err == nil || !strings.Contains(err.Error(), "launchRockets: guarded by the policy but not served") {
		t.Fatalf("a policy with an unknown operation: %v", err)
	}

	// An API operation declared public: its route takes a token anyway.
	pol, err = policyOf(t, func(s *openapi3.T) {
		op := s.Paths.Value("/api/1.0/event-types").Get
		op.Extensions[openapi.ExtAction] = "public"
		op.Security = &openapi3.SecurityRequirements{}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Rules(pol); err == nil || !strings.Contains(err.Error(), "listEventTypes: public, but") {
		t.Fatalf("a public API operation: %v", err)
	}

	if _, err := Rules(nil); err == nil {
		t.Fatal("Rules(nil) succeeded")
	}
}

// The act data writes need acts:write and a member or admin, enforced here
// like every other operation (the fetch service does not check callers).
func TestActDataWritesNeedActsWrite(t *testing.T) {
	pol, err := authspec.Load()
	if err != nil {
		t.Fatal(err)
	}
	rules, err := Rules(pol)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"PutActData", "PutActDataPoint"} {
		r := rules[name]
		if len(r.Scopes) != 1 || r.Scopes[0] != auth.ScopeActsWrite || r.Action != auth.Write {
			t.Errorf("%s: %+v, want acts:write and Write", name, r)
		}
	}
}
