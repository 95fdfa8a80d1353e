package httpapi

import (
	"maps"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/openapi"
	"github.com/finsvc/finsvc/pkg/auth"
)

// An operation nobody gave a role, or a role for an operation that does not
// exist, stops the server from starting (New calls Rules).
func TestRulesRefuseAnIncompleteTable(t *testing.T) {
	spec, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rulesFrom(spec, roles); err != nil {
		t.Fatalf("the real table: %v", err)
	}

	missing := maps.Clone(roles)
	delete(missing, "putActDataPoint")
	if _, err := rulesFrom(spec, missing); err == nil || !strings.Contains(err.Error(), "putActDataPoint: no role") {
		t.Fatalf("a table without putActDataPoint: %v", err)
	}

	extra := maps.Clone(roles)
	extra["launchRockets"] = role{action: auth.Admin}
	if _, err := rulesFrom(spec, extra); err == nil || !strings.Contains(err.Error(), "launchRockets is not an operation") {
		t.Fatalf("a table with an unknown operation: %v", err)
	}

	// A requirement the middleware cannot express (alternatives) is refused
	// rather than half-enforced.
	op := spec.Paths.Find("/api/1.0/clients").Get
	alt := *op.Security
	alt = append(alt, alt[0])
	op.Security = &alt
	if _, err := rulesFrom(spec, roles); err == nil || !strings.Contains(err.Error(), "listClients: want exactly one security requirement") {
		t.Fatalf("alternatives: %v", err)
	}
}

// The act data writes need acts:write and a member or admin, enforced here
// like every other operation (the fetch service does not check callers).
func TestActDataWritesNeedActsWrite(t *testing.T) {
	rules, err := Rules()
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
