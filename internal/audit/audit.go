// Package audit owns the audit log: append-only records of
// security-relevant actions (sign-ins, password and role changes, app and
// webhook secrets, registrations...). A record is written by the code that
// performs the action, with the same transaction (Record), so that an
// action rolled back leaves no record and a committed one always has its
// record; an attempt that writes nothing else (a failed sign-in) is
// recorded on its own (RecordAlone).
//
// Who acted comes from the context: the principal (auth.FromContext) and
// the request's facts (WithRequest: source address, user agent, request
// id), which the HTTP layer puts there; an Entry may name its actor itself
// (the user signing in, the service disabling a registration).
//
// There is no update or delete here but Purge, the retention purge; the
// database refuses an UPDATE, and a DELETE of a record younger than
// MinRetention, by trigger (migration 00160).
package audit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/tenant"
)

// Retention bounds (FINSVC_AUDIT_RETENTION).
const (
	DefaultRetention = 365 * 24 * time.Hour
	// MinRetention is also what the database's trigger enforces: no
	// record younger than this can be deleted.
	MinRetention = 90 * 24 * time.Hour
)

// Actions. A record's action is one of these names.
const (
	SignIn                = "auth.sign_in"
	PasswordSet           = "user.password_set"
	PasswordChanged       = "user.password_changed"
	OneTimePasswordIssued = "user.one_time_password_issued"
	UserCreated           = "user.created"
	UserRoleChanged       = "user.role_changed"
	UserDeactivated       = "user.deactivated"
	UserReactivated       = "user.reactivated"
	WebhookCreated        = "webhook.created"
	WebhookUpdated        = "webhook.updated"
	WebhookDisabled       = "webhook.disabled"
	WebhookDeleted        = "webhook.deleted"
	WebhookSecretRotated  = "webhook.secret_rotated"
	// WebhookSecretOverlapEnded: the previous secret of a rotation stopped
	// signing before its overlap's end.
	WebhookSecretOverlapEnded = "webhook.secret_overlap_ended"
	// WebhookSecretRevealed: a person typed their password again to read a
	// registration's signing secret in the console (outcome failure: the
	// password was wrong, and nothing was shown).
	WebhookSecretRevealed = "webhook.secret_revealed"
	AppCreated            = "app.created"
	AppSecretRotated      = "app.secret_rotated"
	AppSecretOverlapEnded = "app.secret_overlap_ended"
	AppDeleted            = "app.deleted"
	ConsentGranted        = "consent.granted"
	ConsentRevoked        = "consent.revoked"
	TokenRevoked          = "token.revoked"
	// TokenReuseRevoked: a used authorization code or a rotated refresh
	// token was presented again, and the service revoked every token of
	// its grant (the target).
	TokenReuseRevoked       = "token.reuse_revoked"
	IdempotentReplayRefused = "idempotency.replay_refused"
	// The second factor (internal/mfa). MFAVerified is each use of a
	// factor (outcome failure: a wrong or replayed code); MFARecoveryUsed
	// a recovery code spent; MFARemoved by the user or, for another user,
	// an admin (the reset); MFAPolicyChanged targets the tenant.
	MFAEnrolled            = "mfa.enrolled"
	MFARemoved             = "mfa.removed"
	MFAVerified            = "mfa.verified"
	MFARecoveryUsed        = "mfa.recovery_code_used"
	MFARecoveryRegenerated = "mfa.recovery_codes_regenerated"
	MFAPolicyChanged       = "mfa.policy_changed"
	// Passkeys (WebAuthn credentials): registered (outcome failure: the
	// browser's answer was refused), renamed, removed, and each use
	// (outcome failure: refused). No record names the credential id.
	MFAPasskeyRegistered = "mfa.passkey_registered"
	MFAPasskeyRenamed    = "mfa.passkey_renamed"
	MFAPasskeyRemoved    = "mfa.passkey_removed"
	MFAPasskeyUsed       = "mfa.passkey_used"
)

// Outcomes.
const (
	Success = "success"
	Failure = "failure"
)

// Actor types.
const (
	ActorUser      = "user"      // a person, signed in to the console or by a token without an app
	ActorApp       = "app"       // an OAuth app acting for a user (UserID)
	ActorSystem    = "system"    // the service itself
	ActorAnonymous = "anonymous" // nobody known (a sign-in with an unknown email)
)

// Target types.
const (
	TargetUser    = "user"
	TargetWebhook = "webhook"
	TargetApp     = "app"
	TargetToken   = "token"
	TargetTenant  = "tenant"
	// TargetIdempotencyKey's id is the SHA-256 (hex) of the key as sent:
	// keys are chosen by callers and may carry anything.
	TargetIdempotencyKey = "idempotency_key"
)

// Actor is who acted.
type Actor struct {
	Type     string
	UserID   *int64
	ClientID string // the app, for ActorApp
}

// UserActor is user id acting in person.
func UserActor(id int64) *Actor { return &Actor{Type: ActorUser, UserID: &id} }

// SystemActor is the service.
var SystemActor = &Actor{Type: ActorSystem}

// ActorOf is the principal as an actor: the app with the user it acts
// for, or the user.
func ActorOf(p *auth.Principal) *Actor {
	id := p.UserID
	if p.ClientID != "" {
		return &Actor{Type: ActorApp, UserID: &id, ClientID: p.ClientID}
	}
	return &Actor{Type: ActorUser, UserID: &id}
}

// Request is what the HTTP layer knows of the request being served.
type Request struct {
	Addr      string // the client's address (as the rate limiter sees it)
	UserAgent string
	RequestID string
}

type requestKey struct{}

// WithRequest returns ctx carrying r.
func WithRequest(ctx context.Context, r Request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

// RequestFrom returns the request facts in ctx (zero outside a request).
func RequestFrom(ctx context.Context) Request {
	r, _ := ctx.Value(requestKey{}).(Request)
	return r
}

// Entry is one action to record. Actor nil means the context's principal
// (ActorAnonymous without one); Outcome "" means Success.
type Entry struct {
	Action     string
	TargetType string
	TargetID   string
	Outcome    string
	Actor      *Actor
}

// Target names a target by its numeric id.
func Target(typ string, id int64) (string, string) { return typ, strconv.FormatInt(id, 10) }

// Row is a stored record (table audit_log).
type Row struct {
	TenantID      int64 `gorm:"primaryKey;autoIncrement:false"`
	ID            int64 `gorm:"primaryKey;autoIncrement:false"`
	OccurredAt    time.Time
	ActorType     string
	ActorUserID   *int64
	ActorClientID *string
	SourceAddr    string
	UserAgent     string
	Action        string
	TargetType    string
	TargetID      string
	Outcome       string
	RequestID     string
}

// TableName pins the table.
func (Row) TableName() string { return "audit_log" }

// maxText bounds the free text a client sends (user agent): a record is
// evidence, not storage.
const maxText = 512

func clip(s string) string {
	if len(s) > maxText {
		return s[:maxText]
	}
	return s
}

// Record writes e in tx, the action's own transaction, for the tenant in
// ctx. Its number is taken from the tenant's "audit_log" sequence, whose
// row stays locked until tx commits, so records are numbered in commit
// order.
func Record(ctx context.Context, tx *gorm.DB, e Entry) error {
	return RecordIn(ctx, tx, tenant.ID(ctx), e)
}

// RecordIn is Record for tenant tid, for work that runs across tenants
// (the delivery workers disabling a registration).
func RecordIn(ctx context.Context, tx *gorm.DB, tid int64, e Entry) error {
	id, err := db.NextID(tx, tid, "audit_log")
	if err != nil {
		return fmt.Errorf("audit: number %s: %w", e.Action, err)
	}
	a := e.Actor
	if a == nil {
		if p, ok := auth.FromContext(ctx); ok {
			a = ActorOf(p)
		} else {
			a = &Actor{Type: ActorAnonymous}
		}
	}
	r := RequestFrom(ctx)
	row := Row{
		TenantID: tid, ID: id, OccurredAt: time.Now().UTC().Truncate(time.Microsecond),
		ActorType: a.Type, ActorUserID: a.UserID, SourceAddr: clip(r.Addr), UserAgent: clip(r.UserAgent),
		Action: e.Action, TargetType: e.TargetType, TargetID: e.TargetID, Outcome: e.Outcome, RequestID: clip(r.RequestID),
	}
	if a.ClientID != "" {
		cid := a.ClientID
		row.ActorClientID = &cid
	}
	if row.Outcome == "" {
		row.Outcome = Success
	}
	if err := tx.WithContext(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("audit: record %s: %w", e.Action, err)
	}
	return nil
}

// RecordAlone writes e in a transaction of its own: for an attempt that
// changes nothing else (a failed sign-in), which must be recorded all the
// same.
func RecordAlone(ctx context.Context, d *db.DB, e Entry) error {
	return d.Tx(ctx, func(tx *gorm.DB) error { return Record(ctx, tx, e) })
}

// Filter narrows List; zero fields do not filter.
type Filter struct {
	ActorUserID *int64
	ActorApp    string
	Action      string
	TargetType  string
	TargetID    string
	// From keeps records at or after it, Until those before it.
	From, Until *time.Time
	// After lists the records older than this record id (the next page,
	// newest first); Before the newer ones nearest to it. At most one.
	After, Before *int64
	Limit         int
}

// List returns a page of the tenant's records, newest first, and whether
// more follow in the direction read. It pages by id (commit order), so
// that a page costs its rows from an index whatever the log's length; a
// time bound also bounds the id (page.TimeRange.WhereNumbered), so a page
// far back in time starts near its first record.
func List(ctx context.Context, q *gorm.DB, f Filter) (_ []Row, more bool, err error) {
	if f.After != nil && f.Before != nil {
		return nil, false, apperr.E(apperr.Invalid, "Give starting_after or ending_before, not both.")
	}
	if f.Limit < 1 {
		f.Limit = 25
	}
	s := tenant.Scope(ctx, q.WithContext(ctx).Model(&Row{}))
	if f.ActorUserID != nil {
		s = s.Where("actor_user_id = ?", *f.ActorUserID)
	}
	if f.ActorApp != "" {
		s = s.Where("actor_client_id = ?", f.ActorApp)
	}
	if f.Action != "" {
		s = s.Where("action = ?", f.Action)
	}
	if f.TargetType != "" {
		s = s.Where("target_type = ?", f.TargetType)
	}
	if f.TargetID != "" {
		s = s.Where("target_id = ?", f.TargetID)
	}
	s = page.TimeRange{From: f.From, Until: f.Until}.WhereNumbered(ctx, s, page.AuditLog)
	asc := false
	switch {
	case f.After != nil:
		s = s.Where("id < ?", *f.After)
	case f.Before != nil:
		s = s.Where("id > ?", *f.Before)
		asc = true
	}
	order := "id DESC"
	if asc {
		order = "id ASC"
	}
	var rows []Row
	if err := s.Order(order).Limit(f.Limit + 1).Find(&rows).Error; err != nil {
		return nil, false, fmt.Errorf("audit: list: %w", err)
	}
	more = len(rows) > f.Limit
	if more {
		rows = rows[:f.Limit]
	}
	if asc {
		for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
			rows[i], rows[j] = rows[j], rows[i]
		}
	}
	for i := range rows {
		rows[i].OccurredAt = rows[i].OccurredAt.UTC()
	}
	return rows, more, nil
}

// Get returns one of the tenant's records; another tenant's is NotFound.
func Get(ctx context.Context, q *gorm.DB, id int64) (*Row, error) {
	var r Row
	err := tenant.Scope(ctx, q.WithContext(ctx)).Where("id = ?", id).Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.Ef(apperr.NotFound, "audit record %d not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("audit: get %d: %w", id, err)
	}
	r.OccurredAt = r.OccurredAt.UTC()
	return &r, nil
}

// Purge deletes up to batch records of every tenant older than before
// (the retention purge) and returns how many went. before is clamped to
// MinRetention ago, which the database's trigger enforces as well.
func Purge(ctx context.Context, d *db.DB, before time.Time, batch int) (int64, error) {
	if limit := time.Now().Add(-MinRetention); before.After(limit) {
		before = limit
	}
	lock := ""
	if d.Dialect == db.Postgres {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	res := d.WithContext(ctx).Exec(`DELETE FROM audit_log WHERE (tenant_id, id) IN (
  SELECT tenant_id, id FROM audit_log WHERE occurred_at < ? ORDER BY occurred_at LIMIT ?`+lock+`)`, before.UTC(), batch)
	if res.Error != nil {
		return 0, fmt.Errorf("audit: purge: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// Log reads the audit log of the tenant in the context (the API and the
// console); writes go through Record, in the actions' transactions.
type Log struct{ db *db.DB }

// NewLog returns a Log over d.
func NewLog(d *db.DB) *Log { return &Log{db: d} }

// List is List on the log's database.
func (l *Log) List(ctx context.Context, f Filter) ([]Row, bool, error) { return List(ctx, l.db.DB, f) }

// ExportMax bounds one export (the API says so).
const ExportMax = 100_000

// exportPage is how many records an export reads per query.
const exportPage = 1000

// Export calls fn with each record matching f (its cursors and limit
// ignored), oldest first, at most ExportMax of them, reading them a page
// at a time by id.
func (l *Log) Export(ctx context.Context, f Filter, fn func(Row) error) error {
	var last int64
	for n := 0; n < ExportMax; {
		g := f
		g.After, g.Before, g.Limit = nil, &last, min(exportPage, ExportMax-n)
		rows, more, err := List(ctx, l.db.DB, g)
		if err != nil {
			return err
		}
		// List returns the nearest newer records newest first.
		for i := len(rows) - 1; i >= 0; i-- {
			if err := fn(rows[i]); err != nil {
				return err
			}
			last = rows[i].ID
		}
		n += len(rows)
		if !more {
			return nil
		}
	}
	return nil
}
