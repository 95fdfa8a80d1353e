package openapi_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/finsvc/finsvc/openapi"
)

// serverPackage is an import path into the server module (a link to the
// repository's changelog is no package).
var serverPackage = regexp.MustCompile(`github\.com/finsvc/finsvc/(pkg|gen|cmd|internal)/[a-z]`)

// The published contract names no Go type or package: server-only
// generation hints (money.Decimal for `format: decimal`) live in the
// server's generator configuration (models.cfg.yaml), never in the served
// document.
func TestPublishedSpecHasNoGoExtensions(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal(openapi.Document, &doc); err != nil {
		t.Fatal(err)
	}
	var found []string
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode, yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				if strings.HasPrefix(k, "x-go-") || strings.HasPrefix(k, "x-oapi-codegen-") {
					found = append(found, path+"/"+k)
				}
				walk(n.Content[i+1], path+"/"+k)
			}
		}
	}
	walk(&doc, "")
	if len(found) > 0 {
		t.Errorf("Go generator extensions in the published spec:\n%s", strings.Join(found, "\n"))
	}
	if m := serverPackage.Find(openapi.Document); m != nil {
		t.Errorf("the published spec names %s, a package of the server module", m)
	}
}

// An integrator's view: oapi-codegen run on the served document in a fresh
// module outside this repository, once with no configuration at all (the
// models: money is then a float32, which is why the spec says `format:
// decimal`) and once with the configuration the README gives (models and
// client; the HTTP client renamed, since the API has a resource called
// Client, and `format: decimal` mapped to json.Number). Both build with
// public modules only, and the configured one carries
// 999999999999999999.99 both ways with every digit.
func TestOutsideGeneratedClientBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and builds a module")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if strings.HasPrefix(dir, root+string(filepath.Separator)) {
		t.Fatalf("scratch module %s is inside the repository", dir)
	}
	spec := filepath.Join(dir, "finsvc.yaml")
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("finsvc.yaml", string(openapi.Document))
	write("exact/cfg.yaml", `package: exact
generate:
  models: true
  client: true
output-options:
  client-type-name: APIClient
  type-mapping:
    number:
      formats:
        decimal:
          type: json.Number
          import: encoding/json
`)
	run := func(wd string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = wd
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	// The generator as pinned by this module, run from here; its output goes
	// into the scratch module.
	run(root, gobin, "tool", "oapi-codegen", "-generate", "types", "-package", "plain",
		"-o", filepath.Join(dir, "plain", "plain.gen.go"), spec)
	run(root, gobin, "tool", "oapi-codegen", "-config", filepath.Join(dir, "exact", "cfg.yaml"),
		"-o", filepath.Join(dir, "exact", "exact.gen.go"), spec)
	write("exact/exact_test.go", `package exact

import (
	"encoding/json"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	in := `+"`"+`{"id":1,"company_name":"X","org_number":"1","country":"NO","credit_limit":999999999999999999.99,"created_at":"2026-01-05T09:30:00Z","updated_at":"2026-01-05T09:30:00Z"}`+"`"+`
	var c Client
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	if c.CreditLimit != "999999999999999999.99" {
		t.Fatalf("read %s", c.CreditLimit)
	}
	b, err := json.Marshal(ClientCreate{CompanyName: "X", OrgNumber: "1", Country: "NO", CreditLimit: c.CreditLimit})
	if err != nil {
		t.Fatal(err)
	}
	if want := `+"`"+`{"company_name":"X","country":"NO","credit_limit":999999999999999999.99,"org_number":"1"}`+"`"+`; string(b) != want {
		t.Fatalf("sent %s, want %s", b, want)
	}
}
`)
	write("go.mod", "module example.test/outside\n\ngo 1.24\n")
	run(dir, gobin, "mod", "tidy")
	deps := run(dir, gobin, "list", "-deps", "-test", "./...")
	for _, d := range strings.Fields(deps) {
		if strings.HasPrefix(d, "github.com/finsvc/") {
			t.Errorf("the outside module depends on %s", d)
		}
	}
	run(dir, gobin, "vet", "./...")
	out := run(dir, gobin, "test", "-count=1", "./...")
	if !strings.Contains(out, "ok  \texample.test/outside/exact") {
		t.Errorf("round trip did not run:\n%s", out)
	}
}
