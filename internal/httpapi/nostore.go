package httpapi

import (
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
)

// noStore sends `Cache-Control: no-store` on every response (errors
// included) of the operations whose responses declare that header in the
// spec: the ones that carry a secret (a signing secret, a one-time
// password) and the audit log. The spec is the one list; a response
// carrying a secret must never sit in a browser's or a proxy's cache.
func noStore(spec *openapi3.T) echo.MiddlewareFunc {
	routes := noStoreRoutes(spec)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if routes[routeKey(c.Request().Method, c.Path())] {
				c.Response().Header().Set("Cache-Control", "no-store")
			}
			return next(c)
		}
	}
}

// noStoreRoutes is the set of API routes (routeKey) whose operation
// declares Cache-Control on a response. The OAuth endpoints, outside
// /api/1.0, write their own (RFC 6749 asks for it on tokens and errors).
func noStoreRoutes(spec *openapi3.T) map[string]bool {
	out := map[string]bool{}
	for _, p := range spec.Paths.InMatchingOrder() {
		if !strings.HasPrefix(p, "/api/1.0/") {
			continue
		}
		for method, op := range spec.Paths.Value(p).Operations() {
			if op.Responses == nil {
				continue
			}
			for _, r := range op.Responses.Map() {
				if r != nil && r.Value != nil && hasHeader(r.Value.Headers, "Cache-Control") {
					out[routeKey(method, echoPath(p))] = true
				}
			}
		}
	}
	return out
}
