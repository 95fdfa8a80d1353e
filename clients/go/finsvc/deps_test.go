package finsvc_test

import (
	"os"
	"strings"
	"testing"
)

// allowed is everything the client module may require: the generated
// client's runtime (and what it needs), YAML for GET /openapi.yaml, and
// oauth2. The server module, its database drivers and web framework must
// never reach an integrator's build through this module.
var allowed = map[string]bool{
	"github.com/oapi-codegen/runtime":    true,
	"github.com/apapsch/go-jsonmerge/v2": true,
	"github.com/google/uuid":             true,
	"go.yaml.in/yaml/v3":                 true,
	"golang.org/x/oauth2":                true,
}

func TestModuleRequiresOnlyClientDependencies(t *testing.T) {
	b, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	inBlock := false
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		var path string
		switch {
		case line == "require (":
			inBlock = true
			continue
		case inBlock && line == ")":
			inBlock = false
			continue
		case inBlock && line != "":
			path = strings.Fields(line)[0]
		case strings.HasPrefix(line, "require "):
			path = strings.Fields(line)[1]
		case strings.HasPrefix(line, "replace "):
			t.Errorf("go.mod has a replace directive, which consumers would not see: %s", line)
		}
		if path == "" {
			continue
		}
		n++
		if !allowed[path] {
			t.Errorf("go.mod requires %s, which a client does not need (or add it to allowed with the reason)", path)
		}
	}
	if n == 0 {
		t.Fatal("read no requirement from go.mod")
	}
}
