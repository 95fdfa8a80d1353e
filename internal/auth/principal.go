// Package auth defines the authenticated principal of an API call, the
// rule that combines token scopes with user roles (Principal.Permit) and
// the operation policy that says, per operation, which scopes and which
// action it needs (Policy, read from the spec by the composition root).
// The bearer middleware fills a Principal; the HTTP layer's authorization
// middleware, the pages and the webhook registry ask the Policy.
//
// Standard library only (and apperr): the policy is plain data.
package auth

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/finsvc/finsvc/internal/apperr"
)

// Roles.
const (
	RoleAdmin  = "admin"
	RoleMember = "member"
	RoleViewer = "viewer"
)

// The scope constants and AllScopes are generated from the spec's oauth2
// scheme (scopes.gen.go), the one place scopes are declared.
//
//go:generate go run ../../openapi/cmd/derive -spec ../../openapi/finsvc.yaml -what scopes -package auth -o scopes.gen.go

// ValidRole reports whether r is a known role.
func ValidRole(r string) bool { return r == RoleAdmin || r == RoleMember || r == RoleViewer }

// Principal is who is calling: a user, acting through an app (OAuth client).
type Principal struct {
	TenantID int64
	UserID   int64
	Role     string
	ClientID string   // the OAuth app the token was issued to
	Scopes   []string // granted scopes
	// ExpiresAt is when the access token stops being valid (zero: unknown).
	// Caches of authentication results must not outlive it.
	ExpiresAt time.Time
}

// HasScope reports whether the token carries scope s.
func (p *Principal) HasScope(s string) bool { return slices.Contains(p.Scopes, s) }

// Action is what a call needs from the user's role. The spec names it
// (`x-finsvc-action`) with Action.String's words.
type Action int

const (
	Read   Action = iota // any role
	Write                // member or admin
	Admin                // admin only
	Public               // no caller needed (token endpoints, probes, docs)
)

var actionNames = [...]string{Read: "read", Write: "write", Admin: "admin", Public: "public"}

// String is the action's name in the spec ("read"); "" for an unknown one.
func (a Action) String() string {
	if a < 0 || int(a) >= len(actionNames) {
		return ""
	}
	return actionNames[a]
}

// ParseAction reads an action's name in the spec.
func ParseAction(s string) (Action, error) {
	for a, name := range actionNames {
		if name == s {
			return Action(a), nil
		}
	}
	return 0, fmt.Errorf("unknown action %q (want one of %v)", s, actionNames)
}

// errNoPrincipal refuses a call that needs a caller and has none.
func errNoPrincipal() error { return apperr.E(apperr.Unauthenticated, "authentication required") }

func (p *Principal) roleAllows(a Action) bool {
	switch a {
	case Public:
		return true
	case Read:
		return ValidRole(p.Role)
	case Write:
		return p.Role == RoleMember || p.Role == RoleAdmin
	case Admin:
		return p.Role == RoleAdmin
	}
	return false
}

// Permit is the permission rule: the token must carry every scope in scopes
// and the user's role must allow a. Both are needed (the scopes say what the
// app may do, the role what the user may); failing either is a 403. doing
// names the action in the refusal ("list users"); empty means "perform this
// action".
func (p *Principal) Permit(scopes []string, a Action, doing string) error {
	for _, s := range scopes {
		if !p.HasScope(s) {
			return apperr.Ef(apperr.Forbidden, "token lacks the %s scope", s)
		}
	}
	if !p.roleAllows(a) {
		if doing == "" {
			doing = "perform this action"
		}
		return apperr.Ef(apperr.Forbidden, "role %s may not %s", p.Role, doing)
	}
	return nil
}

type ctxKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the principal in ctx, if any.
func FromContext(ctx context.Context) (*Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(*Principal)
	return p, ok && p != nil
}

// MustFromContext returns the principal in ctx and panics without one: for
// code that runs only behind the authorization middleware, which refuses a
// call without a principal before it gets there.
func MustFromContext(ctx context.Context) *Principal {
	p, ok := FromContext(ctx)
	if !ok {
		panic("auth: no principal in the context")
	}
	return p
}
