package oauth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"

	"github.com/ory/fosite"

	"github.com/finsvc/finsvc/internal/tenant"
)

// Key purposes: each derived key is used for one thing only.
const (
	purposeTokens = "finsvc/oauth/token-hmac/v1"
	purposeCSRF   = "finsvc/web/csrf/v1"
	purposeFlash  = "finsvc/web/flash/v1"
)

// deriveKey returns HMAC-SHA256(global secret, purpose || tenant id): a
// per-tenant, per-purpose key. Tokens minted for tenant A therefore fail
// the HMAC check of tenant B even before the (tenant-scoped) lookup.
func deriveKey(secret []byte, purpose string, tenantID int64) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	var id [8]byte
	binary.BigEndian.PutUint64(id[:], uint64(tenantID))
	m.Write(id[:])
	return m.Sum(nil)
}

// tenantKeys is the configuration of fosite's HMAC token strategy: the
// fosite settings, with the global secret replaced by the current tenant's
// derived key.
type tenantKeys struct {
	*fosite.Config
	secret []byte
}

var errNoTenant = errors.New("oauth: no tenant in context")

// GetGlobalSecret implements fosite.GlobalSecretProvider per tenant.
func (k *tenantKeys) GetGlobalSecret(ctx context.Context) ([]byte, error) {
	t, ok := tenant.FromContext(ctx)
	if !ok {
		return nil, errNoTenant
	}
	return deriveKey(k.secret, purposeTokens, t.ID), nil
}

// GetRotatedGlobalSecrets implements fosite.RotatedGlobalSecretsProvider:
// no rotation of the global secret yet.
func (k *tenantKeys) GetRotatedGlobalSecrets(context.Context) ([][]byte, error) { return nil, nil }
