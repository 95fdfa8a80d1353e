package httpapi

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
)

// Authorization is this strict middleware, keyed by operation. What each
// operation needs (scopes and the action the role must allow) is the
// operation policy, auth.Policy, which the composition root reads from the
// spec's declarations once and passes here (Deps.Policy); nothing in this
// package decides a role. It runs after bearer authentication and request
// validation, so a malformed request is a 400 whoever sends it.

// Rules is the policy's rule of every operation the strict server routes,
// keyed by its Go name (CreateAct, what the strict middleware is told). It
// fails when an operation of the server has no rule or a public one (the
// server's routes all take a bearer token), or when an operation the
// policy guards is not served by the strict server (nothing else would
// enforce it).
func Rules(pol *auth.Policy) (map[string]auth.Rule, error) {
	if pol == nil {
		return nil, errors.New("httpapi: authorization: no policy (internal/app reads it from the spec)")
	}
	var errs []error
	byName := map[string]auth.Rule{}
	for _, op := range pol.Operations() {
		if r, _ := pol.Rule(op); !r.Page {
			byName[goName(op)] = r
		}
	}
	rules := map[string]auth.Rule{}
	iface := reflect.TypeFor[apiserver.StrictServerInterface]()
	for i := range iface.NumMethod() {
		name := iface.Method(i).Name
		r, ok := byName[name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("operation %s: no rule in the policy (x-finsvc-action in the spec)", name))
		case r.Action == auth.Public:
			errs = append(errs, fmt.Errorf("operation %s: public, but the API's routes take a bearer token", r.Operation))
		default:
			rules[name] = r
		}
	}
	for name, r := range byName {
		if _, ok := rules[name]; !ok && r.Action != auth.Public {
			errs = append(errs, fmt.Errorf("operation %s: guarded by the policy but not served by the strict server", r.Operation))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("httpapi: authorization: %w", err)
	}
	return rules, nil
}

// goName is the Go name oapi-codegen gives an operation id (createAct →
// CreateAct). An id it would spell otherwise fails Rules, not a request.
func goName(id string) string {
	if id == "" {
		return ""
	}
	return strings.ToUpper(id[:1]) + id[1:]
}

// authorizer is the strict middleware that enforces pol for every
// operation of the strict server.
func authorizer(pol *auth.Policy) (apiserver.StrictMiddlewareFunc, error) {
	rules, err := Rules(pol)
	if err != nil {
		return nil, err
	}
	return func(next apiserver.StrictHandlerFunc, operationID string) apiserver.StrictHandlerFunc {
		r, ok := rules[operationID]
		if !ok { // unreachable: Rules covers every method of the interface
			return func(echo.Context, any) (any, error) {
				return nil, fmt.Errorf("httpapi: no authorization rule for %s", operationID)
			}
		}
		return func(c echo.Context, req any) (any, error) {
			p, ok := auth.FromContext(c.Request().Context())
			if !ok {
				return nil, apperr.E(apperr.Unauthenticated, "authentication required")
			}
			if err := pol.PermitRule(p, r); err != nil {
				return nil, err
			}
			return next(c, req)
		}
	}, nil
}
