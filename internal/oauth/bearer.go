package oauth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/oauth/store"
	"github.com/finsvc/finsvc/internal/tenant"
)

// accessPrefix marks fosite's access tokens (refresh tokens are ory_rt_,
// codes ory_ac_).
const accessPrefix = "ory_at_"

// bearerRow is what the bearer check reads: the token's grant and the
// user's current role, in one indexed query.
type bearerRow struct {
	UserID        int64
	ClientID      string
	GrantedScopes string
	ExpiresAt     time.Time
	Role          string
}

func invalidToken() error {
	return apperr.E(apperr.Unauthenticated, "the access token is invalid, expired or revoked")
}

// AuthenticateBearer implements httpapi.Authenticator. It accepts only an
// access token (never a refresh token or code) minted for the tenant in
// ctx: the token's HMAC is checked with the tenant's key (no database),
// then one lookup by (tenant_id, signature) — the primary key — joined
// with users, so the principal carries the user's current role.
func (s *Service) AuthenticateBearer(ctx context.Context, token string) (*auth.Principal, error) {
	raw, ok := strings.CutPrefix(token, accessPrefix)
	if !ok || len(raw) > 512 {
		return nil, invalidToken()
	}
	// Checks the MAC: a forged "<random>.<signature>" built from a leaked
	// signature, or a token of another tenant, fails here.
	if err := s.enigma.Validate(ctx, raw); err != nil {
		return nil, invalidToken()
	}
	sig := s.enigma.Signature(raw)
	// The statement is prepared once per connection: parsing and planning
	// cost more than the indexed lookup itself.
	var row bearerRow
	err := tenant.Scope(ctx, s.hotDB.Table("oauth_access_tokens")).
		Select("oauth_access_tokens.user_id, oauth_access_tokens.client_id, oauth_access_tokens.granted_scopes, oauth_access_tokens.expires_at, users.role").
		Joins("JOIN users ON users.tenant_id = oauth_access_tokens.tenant_id AND users.id = oauth_access_tokens.user_id AND users.deactivated_at IS NULL").
		Where("oauth_access_tokens.signature = ? AND oauth_access_tokens.active = ?", sig, true).
		Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, invalidToken()
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: bearer lookup: %w", err)
	}
	if !row.ExpiresAt.After(s.now()) {
		return nil, invalidToken()
	}
	return &auth.Principal{
		TenantID: tenant.ID(ctx),
		UserID:   row.UserID,
		Role:     row.Role,
		ClientID: row.ClientID,
		Scopes:   store.SplitScopes(row.GrantedScopes),
		// Lets the bearer cache (internal/authcache) stop serving the token the
		// moment it expires.
		ExpiresAt: row.ExpiresAt,
	}, nil
}
