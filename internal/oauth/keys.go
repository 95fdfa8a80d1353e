package oauth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"

	"github.com/ory/fosite"

	"github.com/finsvc/finsvc/internal/keyring"
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
// key derived from the ring's current secret, and the rotated secrets by
// the keys derived from its previous, unrevoked secrets.
type tenantKeys struct {
	*fosite.Config
	ring *keyring.Ring
}

var errNoTenant = errors.New("oauth: no tenant in context")

// GetGlobalSecret implements fosite.GlobalSecretProvider per tenant.
func (k *tenantKeys) GetGlobalSecret(ctx context.Context) ([]byte, error) {
	t, ok := tenant.FromContext(ctx)
	if !ok {
		return nil, errNoTenant
	}
	return deriveKey(k.ring.Current().Secret(), purposeTokens, t.ID), nil
}

// GetRotatedGlobalSecrets implements fosite.RotatedGlobalSecretsProvider:
// a token signed under a previous secret stays valid until it expires,
// unless that secret is revoked (it leaked).
func (k *tenantKeys) GetRotatedGlobalSecrets(ctx context.Context) ([][]byte, error) {
	t, ok := tenant.FromContext(ctx)
	if !ok {
		return nil, errNoTenant
	}
	var out [][]byte
	for _, key := range k.ring.Verifiers()[1:] {
		out = append(out, deriveKey(key.Secret(), purposeTokens, t.ID))
	}
	return out, nil
}

// verifierKeys returns the tenant's keys for purpose that a signature or
// sealed cookie may be checked with: the current secret's first, then the
// unrevoked previous secrets' (so that a form or a cookie made by a replica
// still on the old secret during a rolling restart is accepted).
func verifierKeys(ring *keyring.Ring, purpose string, tenantID int64) [][]byte {
	var out [][]byte
	for _, key := range ring.Verifiers() {
		out = append(out, deriveKey(key.Secret(), purpose, tenantID))
	}
	return out
}
