package layers_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/finsvc/finsvc/"

// forbiddenInDomain are the web server and its spec machinery. The domain
// may use the generated wire models (gen/models has neither), never these.
var forbiddenInDomain = []string{
	"github.com/labstack/echo",
	"github.com/getkin/kin-openapi",
	"github.com/oapi-codegen/echo-middleware",
	module + "gen/apiserver",
	module + "gen/apiclient",
	module + "pkg/httpapi",
	module + "pkg/app",
}

// upper are the packages that assemble or drive the service; nothing below
// them may import them (tests, commands and the benchmark may).
var upper = []string{module + "pkg/app", module + "pkg/apitest"}

// domain reports whether pkg is a domain package: one that must build and
// run with no HTTP server in its dependency graph.
func domain(pkg string) bool {
	p := strings.TrimPrefix(pkg, module+"pkg/")
	if p == pkg {
		return false
	}
	switch strings.SplitN(p, "/", 2)[0] {
	case "acts", "apperr", "auth", "clients", "counts", "db", "fieldtype", "money", "page", "textinput",
		"templates", "tenant", "users", "webhooks":
		// webhooks/* delivers over net/http as a client: that is allowed;
		// only the server side is forbidden.
		return true
	}
	return false
}

type pkgDeps struct {
	path    string
	imports []string // direct, non-test
	deps    []string // transitive, non-test
}

func list(t *testing.T) []pkgDeps {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", "github.com/finsvc/finsvc/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	var res []pkgDeps
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), "|", 3)
		if len(parts) != 3 {
			continue
		}
		res = append(res, pkgDeps{path: parts[0], imports: strings.Fields(parts[1]), deps: strings.Fields(parts[2])})
	}
	if len(res) < 10 {
		t.Fatalf("go list found only %d packages", len(res))
	}
	return res
}

func hasPrefix(s string, prefixes []string) (string, bool) {
	for _, p := range prefixes {
		if s == p || strings.HasPrefix(s, p+"/") {
			return p, true
		}
	}
	return "", false
}

// TestDomainIsFreeOfTheWebServer: no domain package depends, even
// transitively, on echo, kin-openapi, the generated server or client, or the
// HTTP layer.
func TestDomainIsFreeOfTheWebServer(t *testing.T) {
	checked := 0
	for _, p := range list(t) {
		if !domain(p.path) {
			continue
		}
		checked++
		for _, d := range p.deps {
			if bad, ok := hasPrefix(d, forbiddenInDomain); ok {
				t.Errorf("%s depends on %s (via %s); domain packages must not (ARCHITECTURE.md, Rules)", p.path, bad, d)
				break
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d domain packages checked; has the layout changed?", checked)
	}
}

// TestNothingBelowImportsTheRoot: pkg/app is the one composition root and
// pkg/apitest drives it; no package under pkg/ (other than those two and the
// harness's own helpers) imports them, so wiring cannot grow a second home.
func TestNothingBelowImportsTheRoot(t *testing.T) {
	for _, p := range list(t) {
		if !strings.HasPrefix(p.path, module+"pkg/") {
			continue
		}
		if _, self := hasPrefix(p.path, upper); self {
			continue
		}
		for _, imp := range p.imports {
			if bad, ok := hasPrefix(imp, upper); ok {
				t.Errorf("%s imports %s; only cmd/, bench/ and tests may", p.path, bad)
			}
		}
	}
}
