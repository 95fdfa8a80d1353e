package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The committed tables are what the generator makes of the committed
// spec: `go test ./...` catches a stale *.gen.go on a machine that never
// runs CI's freshness check.
func TestCommittedTablesAreFresh(t *testing.T) {
	spec := filepath.Join("..", "..", "finsvc.yaml")
	for _, tc := range []struct{ what, pkg, file string }{
		{"scopes", "auth", "../../../internal/auth/scopes.gen.go"},
		{"kinds", "outbox", "../../../internal/webhooks/outbox/kinds.gen.go"},
		{"operations", "auth", "../../../internal/auth/operations.gen.go"},
	} {
		out := filepath.Join(t.TempDir(), "x.go")
		cmd := exec.Command("go", "run", ".", "-spec", spec, "-what", tc.what, "-package", tc.pkg, "-o", out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("derive %s: %v\n%s", tc.what, err, b)
		}
		got, _ := os.ReadFile(out)
		want, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s is stale: run go generate ./...", tc.file)
		}
	}
}

// A kind added to the spec's enums becomes a constant and joins Kinds (or
// SentOnly); a kind in EventKind but not DeliveryEventKind is refused; a
// scope added to the scheme becomes a constant in the spec's order.
func TestTablesFollowTheSpec(t *testing.T) {
	doc := func(eventKinds, deliveryKinds, scopes string, readScope ...string) *yaml.Node {
		if readScope == nil {
			readScope = []string{"act.created: acts:read", "invoice.created: invoices:read", "webhook.test: acts:read"}
		}
		src := `components:
  securitySchemes:
    oauth2:
      flows:
        authorizationCode:
          scopes:
` + scopes + `
  schemas:
    EventKind:
      enum: [` + eventKinds + `]
    DeliveryEventKind:
      enum: [` + deliveryKinds + `]
      x-finsvc-read-scope:
        ` + strings.Join(readScope, "\n        ") + `
`
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(src), &n); err != nil {
			t.Fatal(err)
		}
		return &n
	}
	root := doc("act.created, invoice.created", "act.created, invoice.created, webhook.test",
		"            invoices:read: Read invoices\n            acts:read: Read acts")
	k, err := kinds(root, "outbox")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`InvoiceCreated = "invoice.created"`, `"invoice.created": "invoices:read",`, `var Kinds = []string{"act.created", "invoice.created"}`, `var SentOnly = []string{"webhook.test"}`} {
		if !strings.Contains(strings.Join(strings.Fields(string(k)), " "), want) {
			t.Errorf("kinds lack %q:\n%s", want, k)
		}
	}
	s, err := scopes(root, "auth")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(s), `var AllScopes = []string{"invoices:read", "acts:read"}`) || !strings.Contains(string(s), `ScopeInvoicesRead`) {
		t.Errorf("scopes:\n%s", s)
	}
	for _, tc := range []struct {
		readScope []string
		err       string
	}{
		{[]string{"act.created: acts:read", "webhook.test: acts:read"}, "names no scope for invoice.created"},
		{[]string{"act.created: acts:read", "invoice.created: invoices:write", "webhook.test: acts:read"}, `"invoices:write" is not a scope`},
		{[]string{"act.created: acts:read", "invoice.created: invoices:read", "webhook.test: acts:read", "act.gone: acts:read"}, `"act.gone" is not a DeliveryEventKind`},
	} {
		root := doc("act.created, invoice.created", "act.created, invoice.created, webhook.test",
			"            invoices:read: Read invoices\n            acts:read: Read acts", tc.readScope...)
		if _, err := kinds(root, "outbox"); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("read scopes %v: %v, want %q", tc.readScope, err, tc.err)
		}
	}
	if _, err := kinds(doc("invoice.created", "act.created", "            a: b", "act.created: a"), "outbox"); err == nil || !strings.Contains(err.Error(), "invoice.created is in EventKind but not in DeliveryEventKind") {
		t.Errorf("a subscribable kind that is never delivered: %v", err)
	}
}

// Every operationId and every page becomes an Op, in the spec's order;
// an operation without an id, or a name used twice, is refused.
func TestOperationsFollowTheSpec(t *testing.T) {
	doc := func(src string) *yaml.Node {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(src), &n); err != nil {
			t.Fatal(err)
		}
		return &n
	}
	out, err := operations(doc(`paths:
  /a:
    get: {operationId: listAs}
    post: {operationId: createA}
  /b:
    delete: {operationId: deleteB}
x-finsvc-pages:
  manageApps: {action: admin}
`), "auth")
	if err != nil {
		t.Fatal(err)
	}
	src := string(out)
	for _, want := range []string{`OpListAs     = Op{"listAs"}`, `OpCreateA    = Op{"createA"}`, `PageManageApps = Op{"manageApps"}`, "var AllOps = []Op{OpListAs, OpCreateA, OpDeleteB, PageManageApps}"} {
		if !strings.Contains(strings.Join(strings.Fields(src), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("generated source lacks %q:\n%s", want, src)
		}
	}
	for name, bad := range map[string]string{
		"no operationId":               "paths:\n  /a:\n    get: {summary: x}\n",
		"a repeated id":                "paths:\n  /a:\n    get: {operationId: x}\n  /b:\n    get: {operationId: x}\n",
		"a page named as an operation": "paths:\n  /a:\n    get: {operationId: manageApps}\nx-finsvc-pages:\n  manageApps: {action: admin}\n",
	} {
		if _, err := operations(doc(bad), "auth"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
