package auth

import (
	"errors"
	"fmt"
	"slices"
	"sort"
)

// The operation policy: who may call each operation. It is declared once,
// in the spec (openapi/finsvc.yaml: `x-finsvc-action` and
// `x-finsvc-forbidden` on every operation, `x-finsvc-pages` for the pages
// outside the API), read once by the composition root (authspec.FromSpec) and
// handed to every place that decides: the API's authorization middleware,
// the console, the developer pages and the webhook registry. Nothing else
// decides which role may do what.

//go:generate go run ../../openapi/cmd/derive -spec ../../openapi/finsvc.yaml -what operations -package auth -o operations.gen.go

// Op names an operation of the spec or a page of its x-finsvc-pages. The
// only values are the generated ones (operations.gen.go, AllOps): a caller
// cannot ask about an operation the spec does not declare, and a typo does
// not compile. The zero Op names nothing.
type Op struct{ id string }

// String is the operationId (or page name).
func (o Op) String() string { return o.id }

// IsZero reports whether o names nothing.
func (o Op) IsZero() bool { return o.id == "" }

// Rule is the policy of one operation (or page): the scopes its token must
// carry, the action the caller's role must allow, and the words its 403
// uses ("list users" in "role viewer may not list users").
type Rule struct {
	Operation string   // the spec's operationId (createAct), or a page name (manageApps)
	Action    Action   // Public needs no caller at all
	Scopes    []string // every one needed; empty means any valid token
	Forbidden string   // empty: "perform this action"
	// Page marks a browser page outside the API (x-finsvc-pages), which
	// only PermitRole asks about.
	Page bool
}

// Policy is every operation's Rule, keyed by operation. It is plain data,
// read-only once built, safe for concurrent use.
type Policy struct {
	rules map[string]Rule
}

// NewPolicy checks rules and returns them as a Policy. It fails on an
// unnamed or repeated operation, an unknown action, or a public operation
// that asks for scopes.
func NewPolicy(rules []Rule) (*Policy, error) {
	p := &Policy{rules: make(map[string]Rule, len(rules))}
	var errs []error
	for _, r := range rules {
		switch {
		case r.Operation == "":
			errs = append(errs, errors.New("a rule without an operation"))
			continue
		case r.Action.String() == "":
			errs = append(errs, fmt.Errorf("%s: unknown action %d", r.Operation, r.Action))
			continue
		case r.Action == Public && len(r.Scopes) > 0:
			errs = append(errs, fmt.Errorf("%s: a public operation needs no scopes, got %v", r.Operation, r.Scopes))
			continue
		}
		if _, dup := p.rules[r.Operation]; dup {
			errs = append(errs, fmt.Errorf("%s: two rules", r.Operation))
			continue
		}
		r.Scopes = slices.Clone(r.Scopes)
		p.rules[r.Operation] = r
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("auth: policy: %w", err)
	}
	return p, nil
}

// Rule returns the rule of op.
func (p *Policy) Rule(op string) (Rule, bool) {
	r, ok := p.rules[op]
	if ok {
		r.Scopes = slices.Clone(r.Scopes)
	}
	return r, ok
}

// Operations lists every operation with a rule, sorted.
func (p *Policy) Operations() []string {
	out := make([]string, 0, len(p.rules))
	for op := range p.rules {
		out = append(out, op)
	}
	sort.Strings(out)
	return out
}

// Complete fails unless the policy has a rule for every Op and an Op for
// every rule: the policy read from the spec and the names generated from it
// are the same list (a stale operations.gen.go stops the start). With it,
// every operation any caller can ask about has a rule.
func (p *Policy) Complete() error {
	var missing, extra []string
	known := make(map[string]bool, len(AllOps))
	for _, op := range AllOps {
		known[op.id] = true
		if _, ok := p.rules[op.id]; !ok {
			missing = append(missing, op.id)
		}
	}
	for id := range p.rules {
		if !known[id] {
			extra = append(extra, id)
		}
	}
	sort.Strings(extra)
	var errs []error
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("auth: the policy has no rule for %v", missing))
	}
	if len(extra) > 0 {
		errs = append(errs, fmt.Errorf("auth: the policy has rules for %v, which are not generated operations (go generate ./internal/auth)", extra))
	}
	return errors.Join(errs...)
}

// Permit is the whole rule of op for a call through an app: the token's
// scopes and the user's role (Principal.Permit). An operation without a
// rule is refused.
func (p *Policy) Permit(pr *Principal, op Op) error {
	r, ok := p.rules[op.id]
	if !ok {
		return fmt.Errorf("auth: no rule for the operation %s", op)
	}
	return p.PermitRule(pr, r)
}

// PermitRule is Permit with the rule itself, for the API's router, which
// holds every rule of the policy by the spec's operationId (Rules).
func (p *Policy) PermitRule(pr *Principal, r Rule) error {
	if r.Action == Public {
		return nil
	}
	if pr == nil {
		return errNoPrincipal()
	}
	return pr.Permit(r.Scopes, r.Action, r.Forbidden)
}

// PermitRole is the role half of op's rule: a signed-in user on a page
// (the console, the developer pages) acts with their role and no app's
// scopes.
func (p *Policy) PermitRole(pr *Principal, op Op) error {
	r, ok := p.rules[op.id]
	if !ok {
		return fmt.Errorf("auth: no rule for the operation %s", op)
	}
	if r.Action == Public {
		return nil
	}
	if pr == nil {
		return errNoPrincipal()
	}
	return pr.Permit(nil, r.Action, r.Forbidden)
}

// Allows reports whether PermitRole lets pr do op (what a page shows).
func (p *Policy) Allows(pr *Principal, op Op) bool { return p.PermitRole(pr, op) == nil }
