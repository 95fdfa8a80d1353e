package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/handler/pkce"
	fstorage "github.com/ory/fosite/storage"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
)

// Table names of the fosite request kinds.
const (
	tableCodes   = "oauth_codes"
	tableAccess  = "oauth_access_tokens"
	tableRefresh = "oauth_refresh_tokens"
	tablePKCE    = "oauth_pkce"
)

// ErrAlreadyUsed is returned (wrapped with fosite's own sentinel) when an
// authorization code or refresh token was consumed by a concurrent request
// between our read and our conditional UPDATE: the loser of the race must
// see invalid_grant, not a server error.
var ErrAlreadyUsed = errors.New("oauth store: code or token already used")

// formKeys are the only request parameters persisted: what later steps read
// (the redirect_uri check at the token endpoint, the PKCE challenge). Codes,
// tokens, secrets and verifiers from a token request never reach a row.
var formKeys = []string{"client_id", "redirect_uri", "response_type", "scope", "code_challenge", "code_challenge_method"}

// Store implements the fosite storage interfaces used by the composed
// handlers (client manager, authorize code, access and refresh tokens,
// revocation, PKCE) plus storage.Transactional.
type Store struct {
	db  *db.DB
	now func() time.Time
}

// New returns a Store over d.
func New(d *db.DB) *Store { return &Store{db: d} }

// SetClock sets the clock that decides whether an app's previous secret
// is still valid (default time.Now; the service passes its own).
func (s *Store) SetClock(now func() time.Time) { s.now = now }

func (s *Store) clock() time.Time {
	if s.now == nil {
		return time.Now()
	}
	return s.now()
}

var (
	_ fosite.Storage                = (*Store)(nil)
	_ oauth2.CoreStorage            = (*Store)(nil)
	_ oauth2.TokenRevocationStorage = (*Store)(nil)
	_ pkce.PKCERequestStorage       = (*Store)(nil)
	_ fstorage.Transactional        = (*Store)(nil)
)

// request is one row of a fosite request table.
type request struct {
	TenantID        int64
	Signature       string
	RequestID       string
	RequestedAt     time.Time
	ClientID        string
	UserID          int64
	Scopes          string
	GrantedScopes   string
	FormData        string
	SessionData     string
	ExpiresAt       time.Time
	Active          bool
	AccessSignature string `gorm:"-"` // refresh tokens only; written explicitly
}

type txKey struct{}

// txState is a storage.Transactional transaction. The database transaction
// opens only when an operation needs it: fosite's refresh transaction
// (RotateRefreshToken, then the new access and refresh tokens) is held back
// in rot and written at Commit, on PostgreSQL as one statement
// (commitRotation). Any other operation first opens the transaction and
// writes what was held back, in order.
type txState struct {
	db     *gorm.DB  // the database transaction; nil until opened
	rot    *rotation // held back; nil once written
	err    error     // opening it or writing what was held back failed
	closed bool      // committed or rolled back
}

// rotation is a refresh-token rotation held back until Commit: the
// presented token's signature and the rows of the tokens replacing it.
type rotation struct {
	signature       string
	access, refresh map[string]any
}

func txOf(ctx context.Context) *txState {
	t, _ := ctx.Value(txKey{}).(*txState)
	return t
}

// withTx returns ctx carrying the open database transaction tx, for the
// store's own multi-statement writes.
func withTx(ctx context.Context, tx *gorm.DB) context.Context {
	return context.WithValue(ctx, txKey{}, &txState{db: tx})
}

// BeginTX implements storage.Transactional: it returns a context carrying a
// transaction; every store method called with that context runs inside it.
func (s *Store) BeginTX(ctx context.Context) (context.Context, error) {
	if txOf(ctx) != nil {
		return ctx, errors.New("oauth store: transaction already open")
	}
	return context.WithValue(ctx, txKey{}, &txState{}), nil
}

// open opens t's database transaction, if not yet done, and writes what was
// held back.
func (s *Store) open(ctx context.Context, t *txState) error {
	switch {
	case t.err != nil:
		return t.err
	case t.closed:
		return errors.New("oauth store: transaction already ended")
	case t.db != nil:
		return nil
	}
	tx := s.db.DB.WithContext(ctx).Begin()
	if tx.Error != nil {
		t.err = fmt.Errorf("oauth store: begin: %w", tx.Error)
		return t.err
	}
	t.db = tx
	if rot := t.rot; rot != nil {
		t.rot = nil
		if err := s.writeRotation(ctx, rot); err != nil {
			t.err = err
			return err
		}
	}
	return nil
}

// Commit implements storage.Transactional.
func (s *Store) Commit(ctx context.Context) error {
	t := txOf(ctx)
	if t == nil {
		return errors.New("oauth store: commit without transaction")
	}
	if t.err == nil && t.db == nil && !t.closed {
		switch {
		case t.rot == nil:
			t.closed = true // nothing was written
			return nil
		case t.rot.complete() && s.db.Dialect == db.Postgres:
			t.closed = true
			return s.commitRotation(ctx, t.rot)
		}
	}
	if err := s.open(ctx, t); err != nil {
		_ = s.Rollback(ctx)
		return err
	}
	t.closed = true
	if err := t.db.Commit().Error; err != nil {
		return fmt.Errorf("oauth store: commit: %w", err)
	}
	return nil
}

// Rollback implements storage.Transactional. fosite also calls it after a
// failed Commit: a transaction that already ended is left alone.
func (s *Store) Rollback(ctx context.Context) error {
	t := txOf(ctx)
	if t == nil {
		return errors.New("oauth store: rollback without transaction")
	}
	t.rot = nil
	if t.closed || t.db == nil {
		t.closed = true
		return nil
	}
	t.closed = true
	if err := t.db.Rollback().Error; err != nil && !errors.Is(err, gorm.ErrInvalidTransaction) {
		return fmt.Errorf("oauth store: rollback: %w", err)
	}
	return nil
}

// conn is the transaction in ctx (opened now if it was not yet), or the
// pool.
func (s *Store) conn(ctx context.Context) *gorm.DB {
	t := txOf(ctx)
	if t == nil {
		return s.db.DB
	}
	if err := s.open(ctx, t); err != nil {
		// Every statement on this handle fails with err.
		failed := s.db.DB.Session(&gorm.Session{NewDB: true})
		_ = failed.AddError(err)
		return failed
	}
	return t.db
}

// holding returns the rotation held back in ctx's transaction, if the
// transaction has not opened yet.
func holding(ctx context.Context) *rotation {
	if t := txOf(ctx); t != nil && t.db == nil && t.err == nil && !t.closed {
		return t.rot
	}
	return nil
}

func (s *Store) table(ctx context.Context, name string) *gorm.DB {
	return tenant.Scope(ctx, s.conn(ctx).Table(name))
}

// userIDOf reads the resource owner from the fosite session subject.
func userIDOf(r fosite.Requester) (int64, error) {
	sess := r.GetSession()
	if sess == nil {
		return 0, errors.New("oauth store: request without session")
	}
	id, err := strconv.ParseInt(sess.GetSubject(), 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("oauth store: session subject %q is not a user id", sess.GetSubject())
	}
	return id, nil
}

func (s *Store) create(ctx context.Context, table, signature string, r fosite.Requester, kind fosite.TokenType, accessSig string) error {
	row, err := requestRow(ctx, table, signature, r, kind, accessSig)
	if err != nil {
		return err
	}
	return s.insert(ctx, table, row)
}

func (s *Store) insert(ctx context.Context, table string, row map[string]any) error {
	if err := s.conn(ctx).WithContext(ctx).Table(table).Create(row).Error; err != nil {
		return fmt.Errorf("oauth store: create %s: %w", table, err)
	}
	return nil
}

// requestColumns are the columns of a request row, in the order of
// rotationSQL's inserts.
var requestColumns = []string{"tenant_id", "signature", "request_id", "requested_at", "client_id", "user_id",
	"scopes", "granted_scopes", "form_data", "session_data", "expires_at", "active"}

// requestRow is the row of a fosite request table storing r.
func requestRow(ctx context.Context, table, signature string, r fosite.Requester, kind fosite.TokenType, accessSig string) (map[string]any, error) {
	uid, err := userIDOf(r)
	if err != nil {
		return nil, err
	}
	sess, err := json.Marshal(r.GetSession())
	if err != nil {
		return nil, fmt.Errorf("oauth store: encode session: %w", err)
	}
	form := url.Values{}
	for _, k := range formKeys {
		if v := r.GetRequestForm().Get(k); v != "" {
			form.Set(k, v)
		}
	}
	exp := r.GetSession().GetExpiresAt(kind)
	if exp.IsZero() {
		return nil, fmt.Errorf("oauth store: %s without expiry", kind)
	}
	row := map[string]any{
		"tenant_id":      tenant.ID(ctx),
		"signature":      signature,
		"request_id":     r.GetID(),
		"requested_at":   r.GetRequestedAt().UTC(),
		"client_id":      r.GetClient().GetID(),
		"user_id":        uid,
		"scopes":         strings.Join(r.GetRequestedScopes(), " "),
		"granted_scopes": strings.Join(r.GetGrantedScopes(), " "),
		"form_data":      form.Encode(),
		"session_data":   string(sess),
		"expires_at":     exp.UTC(),
		"active":         true,
	}
	if table == tableRefresh {
		row["access_signature"] = accessSig
	}
	return row, nil
}

// requestReads are the reads of one request row by signature, per table,
// written as SQL (tenant.Query) rather than built by GORM per request: the
// refresh grant reads its token this way on every request, and outside a
// transaction on PostgreSQL the read runs on pgx itself.
var requestReads = func() map[string]tenant.Query {
	m := map[string]tenant.Query{}
	for _, t := range []string{tableCodes, tableAccess, tableRefresh, tablePKCE} {
		m[t] = tenant.NewQuery("SELECT " + strings.Join(requestColumns, ", ") + " FROM " + t + " WHERE tenant_id = ? AND signature = ? LIMIT 1")
	}
	return m
}()

// prefetched is the row PrefetchRefresh read for a refresh token, outside a
// transaction (a read in one must see the transaction's own state).
func (s *Store) prefetched(ctx context.Context, table, signature string) (*request, bool) {
	if table != tableRefresh || txOf(ctx) != nil {
		return nil, false
	}
	memo, _ := ctx.Value(clientMemoKey{}).(*clientMemo)
	return memo.takeRefresh(ctx, signature)
}

// get loads a request row and rebuilds the fosite request. It returns the
// request even when the row is inactive (with errInactive), because fosite
// needs its id to revoke the family.
func (s *Store) get(ctx context.Context, table, signature string, session fosite.Session, errInactive error) (fosite.Requester, error) {
	var row request
	if prefetched, ok := s.prefetched(ctx, table, signature); ok {
		if prefetched == nil {
			return nil, fosite.ErrNotFound
		}
		row = *prefetched
	} else {
		err := requestReads[table].One(ctx, s.conn(ctx), []any{signature},
			&row.TenantID, &row.Signature, &row.RequestID, &row.RequestedAt, &row.ClientID, &row.UserID,
			&row.Scopes, &row.GrantedScopes, &row.FormData, &row.SessionData, &row.ExpiresAt, &row.Active)
		if errors.Is(err, db.ErrNoRows) {
			return nil, fosite.ErrNotFound
		}
		if err != nil {
			return nil, fmt.Errorf("oauth store: get %s: %w", table, err)
		}
	}
	client, err := s.Client(ctx, row.ClientID)
	if err != nil {
		return nil, err // the app was deleted: its tokens are gone too
	}
	if session == nil {
		session = &fosite.DefaultSession{}
	}
	if err := json.Unmarshal([]byte(row.SessionData), session); err != nil {
		return nil, fmt.Errorf("oauth store: decode session: %w", err)
	}
	form, err := url.ParseQuery(row.FormData)
	if err != nil {
		return nil, fmt.Errorf("oauth store: decode form: %w", err)
	}
	req := &fosite.Request{
		ID:                row.RequestID,
		RequestedAt:       row.RequestedAt,
		Client:            client,
		RequestedScope:    SplitScopes(row.Scopes),
		GrantedScope:      SplitScopes(row.GrantedScopes),
		Form:              form,
		Session:           session,
		RequestedAudience: fosite.Arguments{},
		GrantedAudience:   fosite.Arguments{},
	}
	if !row.Active && errInactive != nil {
		return req, errInactive
	}
	return req, nil
}

// deactivate flips active to false for one row, only if it is still
// active. Zero rows affected means another request consumed it first.
func (s *Store) deactivate(ctx context.Context, table, signature string) error {
	res := s.table(ctx, table).Where("signature = ? AND active = ?", signature, true).Update("active", false)
	if res.Error != nil {
		return fmt.Errorf("oauth store: deactivate %s: %w", table, res.Error)
	}
	if res.RowsAffected == 0 {
		return ErrAlreadyUsed
	}
	return nil
}

func (s *Store) delete(ctx context.Context, table, column, value string) error {
	if err := s.table(ctx, table).Where(column+" = ?", value).Delete(map[string]any{}).Error; err != nil {
		return fmt.Errorf("oauth store: delete from %s: %w", table, err)
	}
	return nil
}

// CreateAuthorizeCodeSession implements oauth2.AuthorizeCodeStorage.
func (s *Store) CreateAuthorizeCodeSession(ctx context.Context, signature string, r fosite.Requester) error {
	return s.create(ctx, tableCodes, signature, r, fosite.AuthorizeCode, "")
}

// GetAuthorizeCodeSession implements oauth2.AuthorizeCodeStorage. A used
// code comes back with fosite.ErrInvalidatedAuthorizeCode and its request,
// so that fosite revokes the tokens issued for it.
func (s *Store) GetAuthorizeCodeSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	return s.get(ctx, tableCodes, signature, session, fosite.ErrInvalidatedAuthorizeCode)
}

// InvalidateAuthorizeCodeSession implements oauth2.AuthorizeCodeStorage
// with UPDATE … WHERE active: of two concurrent exchanges of one code only
// one flips the row; the other gets ErrAlreadyUsed and fails (invalid_grant).
func (s *Store) InvalidateAuthorizeCodeSession(ctx context.Context, signature string) error {
	if err := s.deactivate(ctx, tableCodes, signature); err != nil {
		if errors.Is(err, ErrAlreadyUsed) {
			return fmt.Errorf("%w: %w", fosite.ErrInvalidatedAuthorizeCode, err)
		}
		return err
	}
	return nil
}

// CreateAccessTokenSession implements oauth2.AccessTokenStorage. After a
// held-back rotation it is held back too (txState).
func (s *Store) CreateAccessTokenSession(ctx context.Context, signature string, r fosite.Requester) error {
	if rot := holding(ctx); rot != nil && rot.access == nil {
		row, err := requestRow(ctx, tableAccess, signature, r, fosite.AccessToken, "")
		rot.access = row
		return err
	}
	return s.create(ctx, tableAccess, signature, r, fosite.AccessToken, "")
}

// GetAccessTokenSession implements oauth2.AccessTokenStorage.
func (s *Store) GetAccessTokenSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	return s.get(ctx, tableAccess, signature, session, fosite.ErrInactiveToken)
}

// DeleteAccessTokenSession implements oauth2.AccessTokenStorage.
func (s *Store) DeleteAccessTokenSession(ctx context.Context, signature string) error {
	return s.delete(ctx, tableAccess, "signature", signature)
}

// CreateRefreshTokenSession implements oauth2.RefreshTokenStorage. After a
// held-back rotation and its access token it is held back too (txState).
func (s *Store) CreateRefreshTokenSession(ctx context.Context, signature, accessSignature string, r fosite.Requester) error {
	if rot := holding(ctx); rot != nil && rot.access != nil && rot.refresh == nil {
		row, err := requestRow(ctx, tableRefresh, signature, r, fosite.RefreshToken, accessSignature)
		rot.refresh = row
		return err
	}
	return s.create(ctx, tableRefresh, signature, r, fosite.RefreshToken, accessSignature)
}

// GetRefreshTokenSession implements oauth2.RefreshTokenStorage. A rotated
// (or revoked) refresh token comes back with fosite.ErrInactiveToken and
// its request: reuse revokes the whole family.
func (s *Store) GetRefreshTokenSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	return s.get(ctx, tableRefresh, signature, session, fosite.ErrInactiveToken)
}

// DeleteRefreshTokenSession implements oauth2.RefreshTokenStorage.
func (s *Store) DeleteRefreshTokenSession(ctx context.Context, signature string) error {
	return s.delete(ctx, tableRefresh, "signature", signature)
}

// RotateRefreshToken implements oauth2.RefreshTokenStorage: the used
// refresh token becomes inactive (kept, so that its reuse is detected) and
// the access token issued with it is deleted. The conditional UPDATE makes
// two concurrent refreshes with one token yield one winner. In a
// transaction that has not opened yet it is held back until Commit
// (txState), and the loser learns of its loss there.
func (s *Store) RotateRefreshToken(ctx context.Context, requestID, signature string) error {
	if t := txOf(ctx); t != nil && t.db == nil && t.rot == nil && t.err == nil && !t.closed {
		t.rot = &rotation{signature: signature}
		return nil
	}
	return s.rotate(ctx, signature)
}

// rotate deactivates the refresh token with signature, if still active,
// and deletes its access token.
func (s *Store) rotate(ctx context.Context, signature string) error {
	var accessSigs []string
	if err := s.conn(ctx).WithContext(ctx).Raw(
		"UPDATE "+tableRefresh+" SET active = ? WHERE tenant_id = ? AND signature = ? AND active = ? RETURNING access_signature",
		false, tenant.ID(ctx), signature, true).Scan(&accessSigs).Error; err != nil {
		return fmt.Errorf("oauth store: rotate refresh token: %w", err)
	}
	if len(accessSigs) == 0 {
		return fmt.Errorf("%w: %w", fosite.ErrInactiveToken, ErrAlreadyUsed)
	}
	if accessSigs[0] != "" {
		return s.delete(ctx, tableAccess, "signature", accessSigs[0])
	}
	return nil
}

func (r *rotation) complete() bool { return r != nil && r.access != nil && r.refresh != nil }

// writeRotation writes a held-back rotation statement by statement, in
// fosite's order, in the transaction of ctx.
func (s *Store) writeRotation(ctx context.Context, r *rotation) error {
	if err := s.rotate(ctx, r.signature); err != nil {
		return err
	}
	if r.access != nil {
		if err := s.insert(ctx, tableAccess, r.access); err != nil {
			return err
		}
	}
	if r.refresh != nil {
		return s.insert(ctx, tableRefresh, r.refresh)
	}
	return nil
}

// rotationSQL is a whole refresh on PostgreSQL, one statement and one round
// trip instead of seven (BEGIN, the presented token's access signature, the
// conditional UPDATE, the DELETE, two INSERTs, COMMIT): the new tokens are
// written only if this statement deactivated the presented token, which a
// concurrent refresh with the same token cannot also do (its UPDATE waits
// for ours and then finds the row inactive).
//
// Deleting the old access token while it is live (a refresh before its
// expiry) fires migration 00220's NOTIFY, and a committing transaction
// that notified holds PostgreSQL's cluster-wide notify lock until its
// commit record is flushed: such commits queue one fsync after another,
// which capped concurrent refreshes at the disk's fsync rate
// (BENCHMARKS.md, "Token endpoint"). So this statement commits
// without waiting for the flush (synchronous_commit off for its transaction
// only, nothing left on the connection for a pooler) and commitRotation
// then waits for durability with db.WaitDurable, outside the lock, where
// concurrent refreshes share fsyncs. No answer leaves before the rotation
// is on disk.
var rotationSQL = func() string {
	cols := strings.Join(requestColumns, ", ")
	// Each new row's values, cast where PostgreSQL cannot infer the type
	// of a parameter in a SELECT list; tenant_id is the presented token's.
	v := make([]string, len(requestColumns))
	for i, c := range requestColumns {
		switch c {
		case "tenant_id":
			v[i] = "u.tenant_id"
		case "requested_at", "expires_at":
			v[i] = "?::timestamptz"
		case "user_id":
			v[i] = "?::bigint"
		case "active":
			v[i] = "true"
		default:
			v[i] = "?::text"
		}
	}
	vals := strings.Join(v, ", ")
	return `WITH used AS (
	UPDATE ` + tableRefresh + ` SET active = false
	WHERE tenant_id = ? AND signature = ? AND active
	RETURNING tenant_id, access_signature
), gone AS (
	DELETE FROM ` + tableAccess + ` a USING used u
	WHERE a.tenant_id = u.tenant_id AND a.signature = u.access_signature
), access AS (
	INSERT INTO ` + tableAccess + ` (` + cols + `) SELECT ` + vals + ` FROM used u
), refresh AS (
	INSERT INTO ` + tableRefresh + ` (` + cols + `, access_signature) SELECT ` + vals + `, ?::text FROM used u
)
SELECT count(*) AS rotated, set_config('synchronous_commit', 'off', true) AS async FROM used`
}()

// rotationArgs are rotationSQL's parameters for r.
func rotationArgs(ctx context.Context, r *rotation) []any {
	args := []any{tenant.ID(ctx), r.signature}
	for _, row := range []map[string]any{r.access, r.refresh} {
		for _, c := range requestColumns {
			if c != "tenant_id" && c != "active" {
				args = append(args, row[c])
			}
		}
	}
	return append(args, r.refresh["access_signature"])
}

// commitRotation writes r with rotationSQL and waits until it is durable.
func (s *Store) commitRotation(ctx context.Context, r *rotation) error {
	var rotated int64
	var async string
	if err := rotationQuery.One(ctx, s.db.DB, rotationArgs(ctx, r), &rotated, &async); err != nil {
		return fmt.Errorf("oauth store: rotate refresh token: %w", err)
	}
	if rotated == 0 {
		return fmt.Errorf("%w: %w", fosite.ErrInactiveToken, ErrAlreadyUsed)
	}
	if err := s.db.WaitDurable(ctx); err != nil {
		return fmt.Errorf("oauth store: rotate refresh token: %w", err)
	}
	return nil
}

// The rotation as db.Query: outside a traced request it runs on pgx
// itself, without GORM building it per request (it has 25 parameters).
var rotationQuery = db.NewQuery(rotationSQL)

// RevokeRefreshToken implements oauth2.TokenRevocationStorage: every
// refresh token of the family becomes inactive.
func (s *Store) RevokeRefreshToken(ctx context.Context, requestID string) error {
	if err := s.table(ctx, tableRefresh).Where("request_id = ?", requestID).Update("active", false).Error; err != nil {
		return fmt.Errorf("oauth store: revoke refresh tokens: %w", err)
	}
	return nil
}

// RevokeAccessToken implements oauth2.TokenRevocationStorage: every access
// token of the family is deleted, and the revocation is recorded in the
// audit log (recordRevocation) in the same transaction. fosite calls it at
// the revocation endpoint (a context from ForRevocation: audit.TokenRevoked)
// and when a used code or a rotated refresh token is presented again (its
// own reuse handling, without: audit.TokenReuseRevoked); it calls nothing
// else here, since refreshes rotate through RotateRefreshToken.
func (s *Store) RevokeAccessToken(ctx context.Context, requestID string) error {
	action := audit.TokenReuseRevoked
	if ctx.Value(revocationKey{}) != nil {
		action = audit.TokenRevoked
	}
	if txOf(ctx) != nil {
		// fosite's handling of a reused refresh token, in the transaction
		// it opened (BeginTX) for the whole revocation.
		if err := s.recordRevocation(ctx, s.conn(ctx), requestID, action); err != nil {
			return err
		}
		return s.delete(ctx, tableAccess, "request_id", requestID)
	}
	return s.db.Tx(ctx, func(tx *gorm.DB) error {
		tctx := withTx(ctx, tx)
		if err := s.recordRevocation(tctx, tx, requestID, action); err != nil {
			return err
		}
		return s.delete(tctx, tableAccess, "request_id", requestID)
	})
}

type revocationKey struct{}

// ForRevocation returns ctx for a revocation by the app that holds the
// token (the revocation endpoint): RevokeAccessToken records it in the
// audit log as audit.TokenRevoked. Run the revocation in one transaction
// (db.InTx) so that the record commits with the whole revocation.
func ForRevocation(ctx context.Context) context.Context {
	return context.WithValue(ctx, revocationKey{}, true)
}

// recordRevocation records action, the revocation of token family
// requestID, by its app for its user, in tx. Its target is the family's
// request id, never a token or a signature. A family with no row left
// records nothing.
func (s *Store) recordRevocation(ctx context.Context, tx *gorm.DB, requestID, action string) error {
	var owner struct {
		ClientID string
		UserID   int64
	}
	var n int64
	for _, t := range []string{tableAccess, tableRefresh} {
		res := s.table(ctx, t).Select("client_id, user_id").Where("request_id = ?", requestID).Limit(1).Scan(&owner)
		if res.Error != nil {
			return fmt.Errorf("oauth store: find token family: %w", res.Error)
		}
		if n = res.RowsAffected; n > 0 {
			break
		}
	}
	if n == 0 {
		return nil
	}
	return audit.Record(ctx, tx, audit.Entry{Action: action, TargetType: audit.TargetToken, TargetID: requestID,
		Actor: &audit.Actor{Type: audit.ActorApp, UserID: &owner.UserID, ClientID: owner.ClientID}})
}

// CreatePKCERequestSession implements pkce.PKCERequestStorage.
func (s *Store) CreatePKCERequestSession(ctx context.Context, signature string, r fosite.Requester) error {
	return s.create(ctx, tablePKCE, signature, r, fosite.AuthorizeCode, "")
}

// GetPKCERequestSession implements pkce.PKCERequestStorage.
func (s *Store) GetPKCERequestSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	return s.get(ctx, tablePKCE, signature, session, nil)
}

// DeletePKCERequestSession implements pkce.PKCERequestStorage.
func (s *Store) DeletePKCERequestSession(ctx context.Context, signature string) error {
	return s.delete(ctx, tablePKCE, "signature", signature)
}

// RevokeFamilyOfCode revokes every token issued from the grant of the
// authorization code with this signature (see revokeFamilyOf).
func (s *Store) RevokeFamilyOfCode(ctx context.Context, signature string) error {
	return s.revokeFamilyOf(ctx, tableCodes, signature)
}

// RevokeFamilyOfRefreshToken revokes every token issued from the grant of
// the refresh token with this signature (see revokeFamilyOf).
func (s *Store) RevokeFamilyOfRefreshToken(ctx context.Context, signature string) error {
	return s.revokeFamilyOf(ctx, tableRefresh, signature)
}

// revokeFamilyOf finds the grant (fosite's request id, shared by the code
// and every token issued from it) of the row with this signature and
// revokes the whole family: access tokens deleted, refresh tokens and
// codes deactivated. It runs in a transaction of its own, after the failed
// request's transaction is gone: the loser of a race learns that the code
// or token was used only once the winner has committed (PostgreSQL blocks
// its conditional UPDATE until then, SQLite its BEGIN IMMEDIATE), so the
// winner's new tokens are visible here. No such row (already purged, or
// deleted by fosite's own reuse handling, which revoked the family then)
// leaves nothing to do.
//
// The presented row is locked first, as every other writer of the family
// (the rotation, fosite's reuse handling) locks it first: concurrent
// revocations queue on it instead of deadlocking on the family's rows.
//
// The revocation is recorded in the audit log in the same transaction
// (audit.TokenReuseRevoked, as RevokeAccessToken does for fosite's own):
// the app that holds the grant, for its user, is the actor, and the
// grant's request id the target, never the code, the token or a
// signature. So a revocation on reuse is one record, whichever of the two
// revoked the grant.
func (s *Store) revokeFamilyOf(ctx context.Context, table, signature string) error {
	return s.db.Tx(ctx, func(tx *gorm.DB) error {
		tctx := withTx(ctx, tx)
		var grants []struct {
			RequestID string
			ClientID  string
			UserID    int64
		}
		if err := s.db.ForUpdate(s.table(tctx, table)).Select("request_id, client_id, user_id").
			Where("signature = ?", signature).Scan(&grants).Error; err != nil {
			return fmt.Errorf("oauth store: find token family: %w", err)
		}
		if len(grants) == 0 {
			return nil
		}
		g := grants[0]
		// In fosite's order: refresh tokens, then access tokens.
		for _, t := range []string{tableRefresh, tableCodes} {
			if err := s.table(tctx, t).Where("request_id = ?", g.RequestID).Update("active", false).Error; err != nil {
				return fmt.Errorf("oauth store: revoke family %s: %w", t, err)
			}
		}
		if err := s.table(tctx, tableAccess).Where("request_id = ?", g.RequestID).Delete(map[string]any{}).Error; err != nil {
			return fmt.Errorf("oauth store: revoke family access tokens: %w", err)
		}
		return audit.Record(tctx, tx, audit.Entry{Action: audit.TokenReuseRevoked, TargetType: audit.TargetToken,
			TargetID: g.RequestID, Actor: &audit.Actor{Type: audit.ActorApp, UserID: &g.UserID, ClientID: g.ClientID}})
	})
}

// RevokeUser ends everything user holds with every app: consents, access
// tokens (deleted, so that every replica's token cache drops them), refresh
// tokens and codes (deactivated) and sign-in sessions. users.Store calls
// it when the user is deactivated.
func (s *Store) RevokeUser(ctx context.Context, userID int64) error {
	return s.db.Tx(ctx, func(tx *gorm.DB) error {
		tctx := withTx(ctx, tx)
		for _, t := range []string{"oauth_consents", tableAccess, "web_sessions"} {
			if err := s.table(tctx, t).Where("user_id = ?", userID).Delete(map[string]any{}).Error; err != nil {
				return fmt.Errorf("oauth store: revoke user %d: %s: %w", userID, t, err)
			}
		}
		for _, t := range []string{tableRefresh, tableCodes} {
			if err := s.table(tctx, t).Where("user_id = ?", userID).Update("active", false).Error; err != nil {
				return fmt.Errorf("oauth store: revoke user %d: %s: %w", userID, t, err)
			}
		}
		return nil
	})
}

// RevokeSessions ends the user's sign-in sessions but the one whose id
// hashes to keepHash ("" for none): after a password change, a new
// one-time password, or a forced choice of password. The user's apps keep
// their tokens (README, Security).
func (s *Store) RevokeSessions(ctx context.Context, userID int64, keepHash string) error {
	q := s.table(ctx, "web_sessions").Where("user_id = ?", userID)
	if keepHash != "" {
		q = q.Where("id_hash <> ?", keepHash)
	}
	if err := q.Delete(map[string]any{}).Error; err != nil {
		return fmt.Errorf("oauth store: end the sessions of user %d: %w", userID, err)
	}
	return nil
}

// RevokeUserApp removes a user's grant to an app: the remembered consent,
// every access token (deleted) and refresh token (deactivated), and unused
// codes. Used by /account/apps. When there was something to remove, the
// audit log records the revocation by the user.
func (s *Store) RevokeUserApp(ctx context.Context, userID int64, clientID string) error {
	return s.db.Tx(ctx, func(tx *gorm.DB) error {
		tctx := withTx(ctx, tx)
		w := "user_id = ? AND client_id = ?"
		res := s.table(tctx, "oauth_consents").Where(w, userID, clientID).Delete(map[string]any{})
		if res.Error != nil {
			return fmt.Errorf("oauth store: revoke consent: %w", res.Error)
		}
		n := res.RowsAffected
		if res = s.table(tctx, tableAccess).Where(w, userID, clientID).Delete(map[string]any{}); res.Error != nil {
			return fmt.Errorf("oauth store: revoke access tokens: %w", res.Error)
		}
		n += res.RowsAffected
		for _, t := range []string{tableRefresh, tableCodes} {
			if res = s.table(tctx, t).Where(w+" AND active = ?", userID, clientID, true).Update("active", false); res.Error != nil {
				return fmt.Errorf("oauth store: revoke %s: %w", t, res.Error)
			}
			n += res.RowsAffected
		}
		if n == 0 {
			return nil // nothing granted: nothing revoked
		}
		return audit.Record(ctx, tx, audit.Entry{Action: audit.ConsentRevoked, TargetType: audit.TargetApp, TargetID: clientID,
			Actor: audit.UserActor(userID)})
	})
}
