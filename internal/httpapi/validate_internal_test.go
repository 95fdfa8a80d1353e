package httpapi

import (
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/gen/apiserver"
)

// Every route the generated server registers finds its operation in the
// validator's map, the one echo's match selects; none falls back to the
// per-request router lookup, which would still validate but cost a route
// search per request (BENCHMARKS.md, "Load").
func TestSpecRoutesCoverEveryRegisteredRoute(t *testing.T) {
	spec, err := Spec()
	if err != nil {
		t.Fatal(err)
	}
	routes := specRoutes(spec)
	e := echo.New()
	apiserver.RegisterHandlers(e, stubServer{})
	n := 0
	for _, r := range e.Routes() {
		route := routes[r.Method][r.Path]
		if route == nil {
			t.Errorf("%s %s: no spec operation in the validator's map", r.Method, r.Path)
			continue
		}
		if echoPath(route.Path) != r.Path || route.Method != r.Method {
			t.Errorf("%s %s mapped to %s %s", r.Method, r.Path, route.Method, route.Path)
		}
		n++
	}
	if n < 30 {
		t.Fatalf("only %d routes checked", n)
	}
}
