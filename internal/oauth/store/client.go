// Package store is fosite's storage over GORM: apps (OAuth clients),
// authorization codes, access and refresh tokens, PKCE requests and
// remembered consents, all scoped to the tenant in the context through
// tenant.Scope. Token tables hold signatures, never tokens.
package store

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ory/fosite"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
)

// Client is a registered app. It implements fosite.Client: a confidential
// client of the authorization-code and refresh-token grants.
type Client struct {
	TenantID     int64     `gorm:"primaryKey;autoIncrement:false"`
	ID           string    `gorm:"primaryKey"`
	Name         string    `gorm:"not null"`
	SecretHash   string    `gorm:"not null"`
	RedirectURIs string    `gorm:"column:redirect_uris;not null"` // JSON array
	Scopes       string    `gorm:"not null"`                      // space-separated
	CreatedBy    *int64    `gorm:"column:created_by"`
	CreatedAt    time.Time `gorm:"not null"`
	UpdatedAt    time.Time `gorm:"not null"`
	// PreviousSecretHash is the digest of the secret a rotation replaced
	// (the same form as SecretHash; "" when none), accepted until
	// PreviousSecretExpiresAt.
	PreviousSecretHash      string     `gorm:"column:previous_secret_hash;not null;default:''"`
	PreviousSecretExpiresAt *time.Time `gorm:"column:previous_secret_expires_at"`

	// previousValid is whether the previous secret was still valid when
	// the store loaded the app (Store.Client, by the store's clock).
	previousValid bool `gorm:"-"`
}

// PreviousSecretUntil is when the previous secret stops working, or nil
// when there is none (never set, expired as of now, or ended early).
func (c *Client) PreviousSecretUntil(now time.Time) *time.Time {
	if c.PreviousSecretHash == "" || c.PreviousSecretExpiresAt == nil || !c.PreviousSecretExpiresAt.After(now) {
		return nil
	}
	return c.PreviousSecretExpiresAt
}

var _ fosite.ClientWithSecretRotation = (*Client)(nil)

// GetRotatedHashes implements fosite.ClientWithSecretRotation: the
// previous secret's digest while its overlap lasts, so that the token and
// revocation endpoints accept either secret.
func (c *Client) GetRotatedHashes() [][]byte {
	if !c.previousValid {
		return nil
	}
	return [][]byte{[]byte(c.PreviousSecretHash)}
}

// TableName pins the table name.
func (Client) TableName() string { return "oauth_clients" }

var _ fosite.Client = (*Client)(nil)

// GetID implements fosite.Client.
func (c *Client) GetID() string { return c.ID }

// GetHashedSecret implements fosite.Client: the hex SHA-256 digest.
func (c *Client) GetHashedSecret() []byte { return []byte(c.SecretHash) }

// GetRedirectURIs implements fosite.Client.
func (c *Client) GetRedirectURIs() []string {
	var uris []string
	_ = json.Unmarshal([]byte(c.RedirectURIs), &uris)
	return uris
}

// GetGrantTypes implements fosite.Client.
func (c *Client) GetGrantTypes() fosite.Arguments {
	return fosite.Arguments{"authorization_code", "refresh_token"}
}

// GetResponseTypes implements fosite.Client.
func (c *Client) GetResponseTypes() fosite.Arguments { return fosite.Arguments{"code"} }

// GetScopes implements fosite.Client.
func (c *Client) GetScopes() fosite.Arguments { return SplitScopes(c.Scopes) }

// IsPublic implements fosite.Client: every app has a secret.
func (c *Client) IsPublic() bool { return false }

// GetAudience implements fosite.Client.
func (c *Client) GetAudience() fosite.Arguments { return nil }

// SplitScopes parses a space-separated scope string.
func SplitScopes(s string) fosite.Arguments {
	f := strings.Fields(s)
	if len(f) == 0 {
		return fosite.Arguments{}
	}
	return fosite.Arguments(f)
}

// HashSecret returns the stored form of a client secret: lowercase hex
// SHA-256.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// SecretHasher is fosite's ClientSecretsHasher over SHA-256. Client secrets
// are 256 random bits, so brute force is hopeless without key stretching,
// and bcrypt would cap the token endpoint at a few requests per second.
type SecretHasher struct{}

var _ fosite.Hasher = SecretHasher{}

// Hash implements fosite.Hasher.
func (SecretHasher) Hash(_ context.Context, data []byte) ([]byte, error) {
	return []byte(HashSecret(string(data))), nil
}

// Compare implements fosite.Hasher in constant time.
func (SecretHasher) Compare(_ context.Context, hash, data []byte) error {
	if subtle.ConstantTimeCompare(hash, []byte(HashSecret(string(data)))) != 1 {
		return errors.New("client secret mismatch")
	}
	return nil
}

// GetClient implements fosite.ClientManager: the app of the current tenant
// with that id, or fosite.ErrNotFound (an app of another tenant is unknown
// here, so fosite answers invalid_client).
func (s *Store) GetClient(ctx context.Context, id string) (fosite.Client, error) {
	c, err := s.Client(ctx, id)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Client is GetClient with the concrete type.
func (s *Store) Client(ctx context.Context, id string) (*Client, error) {
	memo, _ := ctx.Value(clientMemoKey{}).(*clientMemo)
	if c := memo.get(ctx, id); c != nil {
		return c, nil
	}
	var c Client
	err := clientRead.One(ctx, s.conn(ctx), []any{id}, c.fields()...)
	if errors.Is(err, db.ErrNoRows) {
		return nil, fosite.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("oauth store: get client: %w", err)
	}
	c.previousValid = c.PreviousSecretUntil(s.clock()) != nil
	memo.put(&c)
	return &c, nil
}

// clientRead is Client's read, written as SQL (tenant.Query): every token
// request and every authorization looks its app up once, and outside a
// transaction on PostgreSQL the read runs on pgx itself.
var clientRead = tenant.NewQuery("SELECT " + clientColumns("") + " FROM oauth_clients WHERE tenant_id = ? AND id = ? LIMIT 1")

// clientColumns are Client's columns in the order of fields, each after
// prefix (a table alias and its dot, or "").
func clientColumns(prefix string) string {
	return columnList(prefix, []string{"tenant_id", "id", "name", "secret_hash", "redirect_uris", "scopes", "created_by",
		"created_at", "updated_at", "previous_secret_hash", "previous_secret_expires_at"})
}

// columnList joins cols for a SELECT list, each after prefix.
func columnList(prefix string, cols []string) string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = prefix + c
	}
	return strings.Join(out, ", ")
}

// fields are c's fields in the order of clientColumns, for a scan.
func (c *Client) fields() []any {
	return []any{&c.TenantID, &c.ID, &c.Name, &c.SecretHash, &c.RedirectURIs, &c.Scopes, &c.CreatedBy,
		&c.CreatedAt, &c.UpdatedAt, &c.PreviousSecretHash, &c.PreviousSecretExpiresAt}
}

type clientMemoKey struct{}

// clientMemo is the app Client loaded last in one request (WithClientMemo)
// and, after PrefetchRefresh, the presented refresh token's row.
type clientMemo struct {
	mu sync.Mutex
	c  *Client

	// refresh is the row of refreshSig read with the client (nil: there
	// is none), taken once by the grant's own read of the token.
	refreshSig string
	refresh    *request
	prefetched bool
}

// WithClientMemo returns a context in which Client loads each app once: a
// token request looks its client up three times (the budget's client
// authentication before the grant, fosite's own, and the client of the
// refresh token's row), and each lookup was a round trip. Scope it to one
// request: an app deleted or given a new secret afterwards must be seen by
// the next request. Only found apps are remembered, so a failed lookup is
// retried, and the answer is keyed by tenant and id.
func WithClientMemo(ctx context.Context) context.Context {
	return context.WithValue(ctx, clientMemoKey{}, &clientMemo{})
}

func (m *clientMemo) get(ctx context.Context, id string) *Client {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.c != nil && m.c.TenantID == tenant.ID(ctx) && m.c.ID == id {
		return m.c
	}
	return nil
}

func (m *clientMemo) put(c *Client) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.c = c
	m.mu.Unlock()
}

// refreshWithClient is the app and one of its tenant's refresh tokens in
// one round trip: the refresh grant's two reads (its client, then its
// token) before anything is written. A token of another app is read all
// the same; the grant refuses it as before.
var refreshWithClient = tenant.NewQuery("SELECT " + clientColumns("c.") + ", " +
	columnList("t.", requestColumns[1:]) + " " + // the token's, after its tenant_id
	"FROM oauth_clients c LEFT JOIN oauth_refresh_tokens t ON t.tenant_id = ? AND t.signature = ? " +
	"WHERE c.tenant_id = ? AND c.id = ? LIMIT 1")

// PrefetchRefresh reads the app clientID and the refresh token with
// signature together into ctx's memo (WithClientMemo), so that the grant's
// lookups of both are answered from it: one round trip instead of two.
// Without a memo, or when the app is not found or the read fails, it
// leaves nothing behind and the grant reads as usual (and reports what it
// finds).
func (s *Store) PrefetchRefresh(ctx context.Context, clientID, signature string) {
	memo, _ := ctx.Value(clientMemoKey{}).(*clientMemo)
	if memo == nil || clientID == "" || signature == "" || txOf(ctx) != nil {
		return
	}
	var (
		c                                    Client
		sig, reqID, cid, sc, gsc, form, sess sql.NullString
		reqAt, exp                           sql.NullTime
		uid                                  sql.NullInt64
		active                               sql.NullBool
	)
	err := refreshWithClient.One(ctx, s.db.DB, []any{signature, tenant.ID(ctx), clientID},
		append(c.fields(), &sig, &reqID, &reqAt, &cid, &uid, &sc, &gsc, &form, &sess, &exp, &active)...)
	if err != nil {
		return
	}
	c.previousValid = c.PreviousSecretUntil(s.clock()) != nil
	var row *request
	if sig.Valid {
		row = &request{TenantID: c.TenantID, Signature: sig.String, RequestID: reqID.String, RequestedAt: reqAt.Time,
			ClientID: cid.String, UserID: uid.Int64, Scopes: sc.String, GrantedScopes: gsc.String,
			FormData: form.String, SessionData: sess.String, ExpiresAt: exp.Time, Active: active.Bool}
	}
	memo.mu.Lock()
	memo.c, memo.refreshSig, memo.refresh, memo.prefetched = &c, signature, row, true
	memo.mu.Unlock()
}

// takeRefresh returns the prefetched row of signature, once: found is
// false when nothing was prefetched for it (read it), row nil when the
// prefetch found no such token.
func (m *clientMemo) takeRefresh(ctx context.Context, signature string) (row *request, found bool) {
	if m == nil {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.prefetched || m.refreshSig != signature || m.c == nil || m.c.TenantID != tenant.ID(ctx) {
		return nil, false
	}
	row, m.prefetched, m.refresh = m.refresh, false, nil
	return row, true
}

// ClientAssertionJWTValid implements fosite.ClientManager. JWT client
// assertions are not enabled, so no JTI is ever known.
func (s *Store) ClientAssertionJWTValid(context.Context, string) error { return nil }

// SetClientAssertionJWT implements fosite.ClientManager (unused: no JWT
// client authentication).
func (s *Store) SetClientAssertionJWT(context.Context, string, time.Time) error { return nil }
