// Package authspec reads the operation policy (auth.Policy) from the
// spec's declarations, for the composition root and the tests: the
// contract package (openapi) stays free of server packages, and auth, a
// domain package, free of the spec's machinery.
package authspec

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/openapi"
)

// Load is FromSpec of the embedded document.
func Load() (*auth.Policy, error) {
	spec, err := openapi.Load()
	if err != nil {
		return nil, err
	}
	return FromSpec(spec)
}

// FromSpec reads the operation policy from spec: for every operation of
// every path (callbacks are requests finsvc sends, not operations it
// serves), its action and 403 wording from the extensions and its scopes
// from its security requirement; and the pages of x-finsvc-pages. It is
// the start-up check of the declarations, and fails when:
//
//   - an operation has no operationId, no x-finsvc-action or an unknown one;
//   - a public operation has a security requirement other than `[]`, or
//     another operation anything but one requirement on the oauth2 scheme;
//   - an operation asks for a scope the oauth2 scheme does not declare, or
//     the scheme's scopes differ from auth.AllScopes (either way);
//   - a page repeats an operation's name or lacks an action;
//   - the rules and the generated names (auth.AllOps) differ.
func FromSpec(spec *openapi3.T) (*auth.Policy, error) {
	var errs []error
	declared, err := declaredScopes(spec)
	if err != nil {
		errs = append(errs, err)
	}
	var rules []auth.Rule
	for _, path := range spec.Paths.InMatchingOrder() {
		item := spec.Paths.Value(path)
		methods := slices.Sorted(maps.Keys(item.Operations()))
		for _, method := range methods {
			op := item.GetOperation(method)
			r, err := operationRule(spec, op, declared)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s %s: %w", method, path, err))
				continue
			}
			rules = append(rules, r)
		}
	}
	pages, err := pageRules(spec)
	if err != nil {
		errs = append(errs, err)
	}
	rules = append(rules, pages...)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("openapi: policy: %w", err)
	}
	pol, err := auth.NewPolicy(rules)
	if err != nil {
		return nil, err
	}
	// The names callers ask with (auth.AllOps) are generated from this
	// spec: a rule without its name, or a name without its rule, is a
	// stale generation.
	if err := pol.Complete(); err != nil {
		return nil, err
	}
	return pol, nil
}

func operationRule(spec *openapi3.T, op *openapi3.Operation, declared map[string]bool) (auth.Rule, error) {
	if op.OperationID == "" {
		return auth.Rule{}, errors.New("no operationId")
	}
	r := auth.Rule{Operation: op.OperationID}
	name, ok := op.Extensions[openapi.ExtAction].(string)
	if !ok {
		return r, fmt.Errorf("%s: no %s (read, write, admin or public): every operation declares who may call it", op.OperationID, openapi.ExtAction)
	}
	a, err := auth.ParseAction(name)
	if err != nil {
		return r, fmt.Errorf("%s: %s: %w", op.OperationID, openapi.ExtAction, err)
	}
	r.Action = a
	if raw, ok := op.Extensions[openapi.ExtForbidden]; ok {
		if r.Forbidden, ok = raw.(string); !ok || r.Forbidden == "" {
			return r, fmt.Errorf("%s: %s must be a non-empty string", op.OperationID, openapi.ExtForbidden)
		}
	}
	sec := spec.Security
	if op.Security != nil {
		sec = *op.Security
	}
	if a == auth.Public {
		if op.Security == nil || len(*op.Security) != 0 {
			return r, fmt.Errorf("%s: a public operation says so with `security: []`", op.OperationID)
		}
		if r.Forbidden != "" {
			return r, fmt.Errorf("%s: a public operation refuses nobody (%s)", op.OperationID, openapi.ExtForbidden)
		}
		return r, nil
	}
	if len(sec) != 1 {
		return r, fmt.Errorf("%s: want exactly one security requirement, got %d", op.OperationID, len(sec))
	}
	scopes, ok := sec[0]["oauth2"]
	if !ok || len(sec[0]) != 1 {
		return r, fmt.Errorf("%s: the security requirement must name the oauth2 scheme alone", op.OperationID)
	}
	for _, s := range scopes {
		if !declared[s] {
			return r, fmt.Errorf("%s: the scope %q is not declared by the oauth2 scheme", op.OperationID, s)
		}
	}
	r.Scopes = slices.Clone(scopes)
	return r, nil
}

// declaredScopes are the oauth2 scheme's scopes, which must be exactly
// auth.AllScopes (the list the consent page and the app forms offer).
func declaredScopes(spec *openapi3.T) (map[string]bool, error) {
	ref := spec.Components.SecuritySchemes["oauth2"]
	if ref == nil || ref.Value == nil || ref.Value.Flows == nil || ref.Value.Flows.AuthorizationCode == nil {
		return nil, errors.New("no oauth2 authorization-code scheme")
	}
	declared := map[string]bool{}
	for s := range ref.Value.Flows.AuthorizationCode.Scopes {
		declared[s] = true
	}
	var onlySpec, onlyCode []string
	for s := range declared {
		if !slices.Contains(auth.AllScopes, s) {
			onlySpec = append(onlySpec, s)
		}
	}
	for _, s := range auth.AllScopes {
		if !declared[s] {
			onlyCode = append(onlyCode, s)
		}
	}
	if len(onlySpec)+len(onlyCode) > 0 {
		sort.Strings(onlySpec)
		return declared, fmt.Errorf("scopes: only in the spec %v, only in auth.AllScopes %v", onlySpec, onlyCode)
	}
	return declared, nil
}

// pageRules reads x-finsvc-pages: {name: {action, forbidden}}.
func pageRules(spec *openapi3.T) ([]auth.Rule, error) {
	raw, ok := spec.Extensions[openapi.ExtPages]
	if !ok {
		return nil, nil
	}
	pages, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s must map page names to {action, forbidden}", openapi.ExtPages)
	}
	var rules []auth.Rule
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(pages)) {
		m, _ := pages[name].(map[string]any)
		action, _ := m["action"].(string)
		a, err := auth.ParseAction(action)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%s: %w", openapi.ExtPages, name, err))
			continue
		}
		forbidden, _ := m["forbidden"].(string)
		rules = append(rules, auth.Rule{Operation: name, Action: a, Forbidden: forbidden, Page: true})
	}
	return rules, errors.Join(errs...)
}
