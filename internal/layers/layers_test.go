package layers_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
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
	module + "internal/httpapi",
	module + "internal/app",
}

// upper are the packages that assemble or drive the service; nothing below
// them may import them (tests, commands and the benchmark may).
var upper = []string{module + "internal/app", module + "internal/apitest"}

// outsideTheDomain are the packages under internal/ that may depend on the
// web server: the HTTP adapters, the composition root, the demo seeder that
// cmd/finsvc runs, and the test harnesses. Every other package under
// internal/ or pkg/, present or future, is held to the domain rule without
// being listed.
var outsideTheDomain = map[string]bool{
	// HTTP adapters
	"httpapi": true, "oauth": true, "web": true, "console": true, "docs": true,
	"metrics": true, "ratelimit": true, "server": true,
	// the composition root, what commands run beside it, and the reading
	// of the spec's policy it (and tests) call
	"app": true, "demo": true, "authspec": true,
	// tests
	"apitest": true, "testdb": true, "acts/actstest": true, "layers": true,
	"integration": true, "web/browsertest": true,
}

// public are the packages outsiders may import: everything else the server
// is made of lives under internal/, where the Go tool keeps other modules
// out. A receiver verifies deliveries with pkg/webhooks/sign.
var public = map[string]bool{"webhooks/sign": true}

// domain reports whether pkg is a domain (or foundation) package: one that
// must build and run with no HTTP server in its dependency graph. That is
// every package under internal/ or pkg/ but the declared exceptions (an
// exception's subpackages are domain packages unless listed too).
func domain(pkg string) bool {
	if p, ok := strings.CutPrefix(pkg, module+"internal/"); ok {
		return !outsideTheDomain[p]
	}
	_, ok := strings.CutPrefix(pkg, module+"pkg/")
	return ok
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
	pkgs := list(t)
	for _, v := range domainViolations(pkgs) {
		t.Error(v)
	}
	checked := 0
	for _, p := range pkgs {
		if domain(p.path) {
			checked++
		}
	}
	if checked < 25 {
		t.Fatalf("only %d domain packages checked; has the layout changed?", checked)
	}
	for p := range outsideTheDomain {
		found := false
		for _, q := range pkgs {
			found = found || q.path == module+"internal/"+p
		}
		if !found {
			t.Errorf("outsideTheDomain lists internal/%s, which does not exist", p)
		}
	}
}

func domainViolations(pkgs []pkgDeps) []string {
	var out []string
	for _, p := range pkgs {
		if !domain(p.path) {
			continue
		}
		for _, d := range p.deps {
			if bad, ok := hasPrefix(d, forbiddenInDomain); ok {
				out = append(out, fmt.Sprintf("%s depends on %s (via %s); domain packages must not (ARCHITECTURE.md, Rules)", p.path, bad, d))
				break
			}
		}
	}
	return out
}

// A new package under internal/ is a domain package without anyone listing
// it: a throwaway internal/invoices that reaches echo is reported, one that
// does not is not, and a listed adapter may.
func TestANewPackageIsCoveredWithoutListingIt(t *testing.T) {
	pkgs := []pkgDeps{
		{path: module + "internal/invoices", deps: []string{module + "internal/db", module + "internal/httpapi", "github.com/labstack/echo/v4"}},
		{path: module + "internal/invoices/pdf", deps: []string{"github.com/labstack/echo/v4"}},
		{path: module + "internal/ledger", deps: []string{module + "internal/db"}},
		{path: module + "internal/console", deps: []string{"github.com/labstack/echo/v4"}},
	}
	got := domainViolations(pkgs)
	if len(got) != 2 || !strings.HasPrefix(got[0], module+"internal/invoices depends on "+module+"internal/httpapi") ||
		!strings.HasPrefix(got[1], module+"internal/invoices/pdf depends on github.com/labstack/echo") {
		t.Fatalf("violations %q", got)
	}
}

// TestNothingBelowImportsTheRoot: internal/app is the one composition root and
// internal/apitest drives it; no package under internal/ or pkg/ (other than
// those two and the harness's own helpers) imports them, so wiring cannot grow
// a second home.
func TestNothingBelowImportsTheRoot(t *testing.T) {
	for _, p := range list(t) {
		if !strings.HasPrefix(p.path, module+"pkg/") && !strings.HasPrefix(p.path, module+"internal/") {
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

// TestArchitectureNamesEveryPackage: ARCHITECTURE.md's Packages section is
// the map of the module; a package it does not name fails here.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile("../../ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "\n## Packages\n")
	end := strings.Index(doc, "\n## Rules\n")
	if start < 0 || end < start {
		t.Fatal("ARCHITECTURE.md has no Packages section before Rules")
	}
	section := doc[start:end]
	for _, p := range list(t) {
		name := strings.TrimPrefix(p.path, module)
		if p.path == strings.TrimSuffix(module, "/") {
			continue
		}
		if !strings.Contains(section, "`"+name+"`") {
			t.Errorf("ARCHITECTURE.md, Packages, does not name %s", name)
		}
	}
}

// TestOnlyThePublicPackagesArePublic: a package under pkg/ is one outsiders
// import, so it is declared in public and stands alone (the standard library
// and other public packages only): an integrator's go get of it pulls no
// server code. Everything else lives under internal/.
func TestOnlyThePublicPackagesArePublic(t *testing.T) {
	pkgs := list(t)
	for _, v := range publicViolations(pkgs) {
		t.Error(v)
	}
	for p := range public {
		found := false
		for _, q := range pkgs {
			found = found || q.path == module+"pkg/"+p
		}
		if !found {
			t.Errorf("public lists pkg/%s, which does not exist", p)
		}
	}
}

func publicViolations(pkgs []pkgDeps) []string {
	var out []string
	for _, p := range pkgs {
		rel, ok := strings.CutPrefix(p.path, module+"pkg/")
		if !ok {
			continue
		}
		if !public[rel] {
			out = append(out, fmt.Sprintf("%s is under pkg/ but not declared public; server packages live under internal/", p.path))
			continue
		}
		for _, d := range p.deps {
			if strings.HasPrefix(d, module) && !strings.HasPrefix(d, module+"pkg/") {
				out = append(out, fmt.Sprintf("%s is public and depends on %s; a public package stands alone", p.path, d))
				break
			}
		}
	}
	return out
}

// A throwaway package added under pkg/ fails, and so does a public package
// that reaches into the server.
func TestANewPublicPackageIsRefused(t *testing.T) {
	got := publicViolations([]pkgDeps{
		{path: module + "pkg/invoices"},
		{path: module + "pkg/webhooks/sign", deps: []string{module + "internal/db"}},
		{path: module + "internal/invoices"},
	})
	if len(got) != 2 || !strings.Contains(got[0], "pkg/invoices is under pkg/ but not declared public") ||
		!strings.Contains(got[1], "pkg/webhooks/sign is public and depends on "+module+"internal/db") {
		t.Fatalf("violations %q", got)
	}
}

// TestNoUpwardArrows: the contract package (openapi and its tools) imports
// no server package, and metrics, which observes the HTTP adapters, imports
// none of them: what it needs of them the composition root hands it.
func TestNoUpwardArrows(t *testing.T) {
	adapters := []string{module + "internal/httpapi", module + "internal/console", module + "internal/oauth",
		module + "internal/web", module + "internal/docs", module + "internal/ratelimit", module + "internal/server"}
	for _, p := range list(t) {
		var below []string
		switch {
		case p.path == module+"openapi" || strings.HasPrefix(p.path, module+"openapi/"):
			below = []string{module + "internal", module + "pkg"}
		case p.path == module+"internal/metrics":
			below = adapters
		default:
			continue
		}
		for _, imp := range p.imports {
			if bad, ok := hasPrefix(imp, below); ok {
				t.Errorf("%s imports %s, a package above it", p.path, bad)
			}
		}
	}
}
