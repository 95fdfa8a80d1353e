// Package auth defines the authenticated principal of an API call and the
// rule that combines token scopes with user roles (Principal.Permit). The
// bearer middleware fills a Principal; the HTTP layer's authorization
// middleware applies the rule with each operation's scopes from the spec.
package auth

import (
	"context"
	"slices"
	"time"

	"github.com/finsvc/finsvc/pkg/apperr"
)

// Roles.
const (
	RoleAdmin  = "admin"
	RoleMember = "member"
	RoleViewer = "viewer"
)

// Scopes.
const (
	ScopeClientsRead    = "clients:read"
	ScopeClientsWrite   = "clients:write"
	ScopeActsRead       = "acts:read"
	ScopeActsWrite      = "acts:write"
	ScopeTemplatesRead  = "templates:read"
	ScopeTemplatesWrite = "templates:write"
	ScopeWebhooksRead   = "webhooks:read"
	ScopeWebhooksWrite  = "webhooks:write"
	ScopeUsersRead      = "users:read"
	ScopeUsersWrite     = "users:write"
	ScopeOfflineAccess  = "offline_access"
)

// AllScopes lists every scope an app may request, in display order. What
// each grants is described once, in the spec's oauth2 security scheme.
var AllScopes = []string{
	ScopeClientsRead, ScopeClientsWrite, ScopeActsRead, ScopeActsWrite,
	ScopeTemplatesRead, ScopeTemplatesWrite, ScopeWebhooksRead, ScopeWebhooksWrite,
	ScopeUsersRead, ScopeUsersWrite, ScopeOfflineAccess,
}

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

// Action is what a call needs from the user's role.
type Action int

const (
	Read  Action = iota // any role
	Write               // member or admin: clients, acts, webhooks
	Admin               // admin only: templates, users, apps
)

func (p *Principal) roleAllows(a Action) bool {
	switch a {
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
