package openapi_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The actions the audit log records have one home, the constant block
// "Actions" of internal/audit; AuditRecord.action's description lists
// each of them once, and nothing else, so that an integrator reading the
// spec knows every action the service writes.
func TestAuditActionsOfTheSpec(t *testing.T) {
	action := load(t).Components.Schemas["AuditRecord"].Value.Properties["action"].Value
	var inSpec []string
	// Each list item names its actions in backquotes before its colon.
	for _, line := range strings.Split(action.Description, "\n") {
		if !strings.HasPrefix(line, "- ") {
			continue
		}
		head, _, _ := strings.Cut(line, ":")
		for _, n := range regexp.MustCompile("`([a-z_]+\\.[a-z_]+)`").FindAllStringSubmatch(head, -1) {
			inSpec = append(inSpec, n[1])
		}
	}
	inGo := auditActions(t)
	if len(inGo) < 20 {
		t.Fatalf("only %d actions found in internal/audit: %v", len(inGo), inGo)
	}
	for _, a := range inGo {
		if n := count(inSpec, a); n != 1 {
			t.Errorf("action %s is listed %d times in AuditRecord.action", a, n)
		}
	}
	for _, a := range inSpec {
		if !slices.Contains(inGo, a) {
			t.Errorf("AuditRecord.action lists %s, which internal/audit does not record", a)
		}
	}
	if !slices.Contains(inSpec, action.Example.(string)) {
		t.Errorf("the example %v is not a listed action", action.Example)
	}
}

func count(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

// auditActions reads the values of internal/audit's constant block whose
// comment starts "Actions.".
func auditActions(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../internal/audit/audit.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST || g.Doc == nil || !strings.HasPrefix(g.Doc.Text(), "Actions.") {
			continue
		}
		for _, s := range g.Specs {
			for _, v := range s.(*ast.ValueSpec).Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("an action that is not a string literal: %#v", v)
				}
				a, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, a)
			}
		}
	}
	return out
}
