// Package mfa is the second factor of console accounts: a TOTP
// authenticator (RFC 6238) per user, its single-use recovery codes,
// passkeys (WebAuthn credentials, several per user: passkey.go), and the
// tenant's policy of whom a second factor is required of.
//
// The TOTP secret is sealed at rest (internal/sealing, bound to the user;
// SealedColumns puts it under `finsvc secret reseal`). A code is accepted
// once: the last accepted time step is stored, and only a later step is
// accepted, within one step of the clock either way. Recovery codes are
// hashed as passwords are (users.Store.HashSecret). Every enrolment,
// removal, use (successful or not) and policy change is an audit record,
// which names no secret, code or credential.
package mfa

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"
	"github.com/pquerna/otp/totp"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/tenant"
)

// TOTP parameters: what every authenticator app supports.
const (
	Period = 30 // seconds per step
	Digits = otp.DigitsSix
	// Skew is how many steps either side of the clock's are accepted.
	Skew = 1
	// RecoveryCodes is how many recovery codes a user holds.
	RecoveryCodes = 10
)

// SealPurpose separates the TOTP secrets' key from every other sealed
// value's (sealing.NewFor).
const SealPurpose = "finsvc totp secrets v1"

// Policy is whom a tenant requires a second factor of.
type Policy string

// The policies.
const (
	PolicyOff      Policy = "off"
	PolicyAdmins   Policy = "admins"
	PolicyEveryone Policy = "everyone"
)

// ParsePolicy reads a policy's name; anything else is apperr.Invalid.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case PolicyOff, PolicyAdmins, PolicyEveryone:
		return p, nil
	}
	return "", apperr.E(apperr.Invalid, "unknown policy").WithField("policy", "must be off, admins or everyone")
}

// Covers reports whether the policy requires a second factor of a user with
// role.
func (p Policy) Covers(role string) bool {
	return p == PolicyEveryone || p == PolicyAdmins && role == auth.RoleAdmin
}

// Hasher hashes recovery codes as passwords are hashed (users.Store).
type Hasher interface {
	HashSecret(secret string) (string, error)
	MatchesSecret(hash, secret string) bool
}

// Store keeps the factors of the tenant in the context.
type Store struct {
	db     *db.DB
	box    *sealing.Box
	hash   Hasher
	now    db.Clock
	issuer string
}

// Option adjusts New.
type Option func(*Store)

// WithClock sets the clock TOTP steps are counted by (tests).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// New returns a Store. box must be made with SealPurpose; issuer is the name
// authenticator apps show beside the account ("finsvc").
func New(d *db.DB, box *sealing.Box, h Hasher, issuer string, opts ...Option) (*Store, error) {
	if d == nil || box == nil || h == nil {
		return nil, errors.New("mfa: database, sealing box and hasher are required")
	}
	s := &Store{db: d, box: box, hash: h, issuer: issuer}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

type totpRow struct {
	TenantID         int64 `gorm:"primaryKey;autoIncrement:false"`
	UserID           int64 `gorm:"primaryKey;autoIncrement:false"`
	SecretCiphertext string
	LastStep         int64
	ConfirmedAt      *time.Time
	CreatedAt        time.Time
}

func (totpRow) TableName() string { return "mfa_totp" }

type recoveryRow struct {
	TenantID int64 `gorm:"primaryKey;autoIncrement:false"`
	UserID   int64 `gorm:"primaryKey;autoIncrement:false"`
	N        int   `gorm:"primaryKey;autoIncrement:false"`
	CodeHash string
	UsedAt   *time.Time
}

func (recoveryRow) TableName() string { return "mfa_recovery_codes" }

type policyRow struct {
	TenantID  int64 `gorm:"primaryKey;autoIncrement:false"`
	Required  string
	UpdatedAt time.Time
}

func (policyRow) TableName() string { return "mfa_policies" }

type noticeRow struct {
	TenantID int64 `gorm:"primaryKey;autoIncrement:false"`
	UserID   int64 `gorm:"primaryKey;autoIncrement:false"`
	ResetAt  time.Time
}

func (noticeRow) TableName() string { return "mfa_reset_notices" }

// ad binds a sealed TOTP secret to its user.
func ad(tenantID, userID int64) []byte { return fmt.Appendf(nil, "totp:%d:%d", tenantID, userID) }

// SealedColumns are this package's sealed columns, for `finsvc secret
// reseal` and `finsvc secret status`.
func SealedColumns() []sealing.Column {
	return []sealing.Column{{
		Table: "mfa_totp", Name: "secret_ciphertext", Purpose: SealPurpose,
		Keys: []string{"tenant_id", "user_id"},
		AD: func(k []string) []byte {
			tid, _ := strconv.ParseInt(k[0], 10, 64)
			uid, _ := strconv.ParseInt(k[1], 10, 64)
			return ad(tid, uid)
		},
	}}
}

// Status is what a user holds.
type Status struct {
	TOTP              bool // confirmed
	Passkeys          int
	RecoveryRemaining int
}

// Has reports whether the user has a second factor: an authenticator app
// or a passkey.
func (st Status) Has() bool { return st.TOTP || st.Passkeys > 0 }

// Status returns what userID holds.
func (s *Store) Status(ctx context.Context, userID int64) (Status, error) {
	var st Status
	var n int64
	err := tenant.Scope(ctx, s.db.DB).Model(&totpRow{}).Where("user_id = ? AND confirmed_at IS NOT NULL", userID).Count(&n).Error
	if err != nil {
		return st, fmt.Errorf("mfa: status: %w", err)
	}
	st.TOTP = n > 0
	if err := tenant.Scope(ctx, s.db.DB).Model(&recoveryRow{}).Where("user_id = ? AND used_at IS NULL", userID).Count(&n).Error; err != nil {
		return st, fmt.Errorf("mfa: status: %w", err)
	}
	st.RecoveryRemaining = int(n)
	if err := tenant.Scope(ctx, s.db.DB).Model(&passkeyRow{}).Where("user_id = ?", userID).Count(&n).Error; err != nil {
		return st, fmt.Errorf("mfa: status: %w", err)
	}
	st.Passkeys = int(n)
	return st, nil
}

// Enrolment is a TOTP secret waiting for its first code.
type Enrolment struct {
	Key *otp.Key // the secret, its otpauth:// URL and QR image
}

// BeginTOTP makes a new secret for userID (account is the name the app
// shows, the email), replacing one that waits for confirmation. A user who
// has a confirmed authenticator must remove it first (apperr.Conflict).
func (s *Store) BeginTOTP(ctx context.Context, userID int64, account string) (*Enrolment, error) {
	key, err := s.generate(account, nil)
	if err != nil {
		return nil, err
	}
	tid := tenant.ID(ctx)
	sealed, err := s.box.Seal(key.Secret(), ad(tid, userID))
	if err != nil {
		return nil, err
	}
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		var rows []totpRow
		if err := tenant.Scope(ctx, s.db.ForUpdate(tx)).Where("user_id = ?", userID).Find(&rows).Error; err != nil {
			return err
		}
		if len(rows) > 0 && rows[0].ConfirmedAt != nil {
			return apperr.E(apperr.Conflict, "an authenticator is already set up; remove it first")
		}
		if len(rows) > 0 {
			if err := tenant.Scope(ctx, tx).Where("user_id = ?", userID).Delete(&totpRow{}).Error; err != nil {
				return err
			}
		}
		return tx.Create(&totpRow{TenantID: tid, UserID: userID, SecretCiphertext: sealed, CreatedAt: s.now.Now()}).Error
	})
	if err != nil {
		return nil, err
	}
	return &Enrolment{Key: key}, nil
}

// generate is the key of secret (nil: a new random one, 20 bytes).
func (s *Store) generate(account string, secret []byte) (*otp.Key, error) {
	key, err := totp.Generate(totp.GenerateOpts{Issuer: s.issuer, AccountName: account, Period: Period,
		Digits: Digits, Algorithm: otp.AlgorithmSHA1, Secret: secret})
	if err != nil {
		return nil, fmt.Errorf("mfa: generate: %w", err)
	}
	return key, nil
}

// PendingTOTP returns the secret waiting for confirmation (to show the QR
// code again), or apperr.NotFound.
func (s *Store) PendingTOTP(ctx context.Context, userID int64, account string) (*Enrolment, error) {
	var row totpRow
	err := tenant.Scope(ctx, s.db.DB).Where("user_id = ? AND confirmed_at IS NULL", userID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.E(apperr.NotFound, "no enrolment in progress")
	}
	if err != nil {
		return nil, err
	}
	secret, err := s.box.Open(row.SecretCiphertext, ad(row.TenantID, row.UserID))
	if err != nil {
		return nil, err
	}
	raw, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(secret)
	if err != nil {
		return nil, fmt.Errorf("mfa: stored secret: %w", err)
	}
	key, err := s.generate(account, raw)
	if err != nil {
		return nil, err
	}
	return &Enrolment{Key: key}, nil
}

// ConfirmTOTP checks the first code of the waiting secret; when right the
// authenticator is set up and the user's ten recovery codes are returned
// (to be shown once). A wrong code is apperr.Unauthenticated.
func (s *Store) ConfirmTOTP(ctx context.Context, userID int64, code string) (recovery []string, err error) {
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		var row totpRow
		err := tenant.Scope(ctx, s.db.ForUpdate(tx)).Where("user_id = ? AND confirmed_at IS NULL", userID).Take(&row).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return apperr.E(apperr.NotFound, "no enrolment in progress; start again")
		}
		if err != nil {
			return err
		}
		step, err := s.match(&row, code)
		if err != nil {
			return err
		}
		if step == 0 {
			return wrongCode()
		}
		now := s.now.Now()
		if err := tenant.Scope(ctx, tx).Model(&totpRow{}).Where("user_id = ?", userID).
			Updates(map[string]any{"confirmed_at": now, "last_step": step}).Error; err != nil {
			return err
		}
		if recovery, err = s.newRecoveryCodes(ctx, tx, userID); err != nil {
			return err
		}
		if err := tenant.Scope(ctx, tx).Where("user_id = ?", userID).Delete(&noticeRow{}).Error; err != nil {
			return err
		}
		return audit.Record(ctx, tx, entry(audit.MFAEnrolled, userID, audit.Success))
	})
	if apperr.Is(err, apperr.Unauthenticated) {
		if rerr := audit.RecordAlone(ctx, s.db, entry(audit.MFAEnrolled, userID, audit.Failure)); rerr != nil {
			return nil, rerr
		}
	}
	return recovery, err
}

func wrongCode() error {
	return apperr.E(apperr.Unauthenticated, "the code is wrong or was already used").WithField("code", "is wrong or was already used")
}

// entry is an audit entry about userID's factors by the context's actor.
func entry(action string, userID int64, outcome string) audit.Entry {
	typ, id := audit.Target(audit.TargetUser, userID)
	return audit.Entry{Action: action, TargetType: typ, TargetID: id, Outcome: outcome}
}

// match returns the time step of code when it is the row's code for a step
// within Skew of now and after the last accepted one; 0 when it is not.
func (s *Store) match(row *totpRow, code string) (int64, error) {
	code = strings.TrimSpace(strings.ReplaceAll(code, " ", ""))
	if len(code) != Digits.Length() {
		return 0, nil
	}
	secret, err := s.box.Open(row.SecretCiphertext, ad(row.TenantID, row.UserID))
	if err != nil {
		return 0, fmt.Errorf("mfa: open the TOTP secret of user %d: %w", row.UserID, err)
	}
	now := s.now.Now().Unix() / Period
	opts := hotp.ValidateOpts{Digits: Digits, Algorithm: otp.AlgorithmSHA1}
	for step := now - Skew; step <= now+Skew; step++ {
		if step <= row.LastStep {
			continue
		}
		if ok, err := hotp.ValidateCustom(code, uint64(step), secret, opts); err == nil && ok {
			return step, nil
		}
	}
	return 0, nil
}

// Method names how a second factor was given (the session's amr).
const (
	MethodOTP      = "otp"
	MethodRecovery = "recovery"
)

// Result is a successful Verify.
type Result struct {
	Method            string
	RecoveryRemaining int // after a recovery code
}

// Verify checks a code userID typed: a TOTP code (accepted once, within
// one step of the clock) or else one of their unused recovery codes (spent
// by this use). A wrong, replayed or spent code is apperr.Unauthenticated;
// a user without a second factor too. Each outcome is audited.
func (s *Store) Verify(ctx context.Context, userID int64, code string) (*Result, error) {
	var res *Result
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		var rows []totpRow
		if err := tenant.Scope(ctx, s.db.ForUpdate(tx)).Where("user_id = ? AND confirmed_at IS NOT NULL", userID).Find(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return wrongCode()
		}
		step, err := s.match(&rows[0], code)
		if err != nil {
			return err
		}
		if step > 0 {
			if err := tenant.Scope(ctx, tx).Model(&totpRow{}).Where("user_id = ?", userID).Update("last_step", step).Error; err != nil {
				return err
			}
			res = &Result{Method: MethodOTP}
			return audit.Record(ctx, tx, entry(audit.MFAVerified, userID, audit.Success))
		}
		left, ok, err := s.spendRecovery(ctx, tx, userID, code)
		if err != nil {
			return err
		}
		if !ok {
			return wrongCode()
		}
		res = &Result{Method: MethodRecovery, RecoveryRemaining: left}
		return audit.Record(ctx, tx, entry(audit.MFARecoveryUsed, userID, audit.Success))
	})
	if apperr.Is(err, apperr.Unauthenticated) {
		if rerr := audit.RecordAlone(ctx, s.db, entry(audit.MFAVerified, userID, audit.Failure)); rerr != nil {
			return nil, rerr
		}
	}
	return res, err
}

// recoveryAlphabet leaves out the letters and digits people confuse.
const recoveryAlphabet = "abcdefghjkmnpqrstuvwxyz23456789"

// normalizeRecovery is how a typed recovery code is compared: lower case,
// without spaces and dashes.
func normalizeRecovery(code string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' {
			return -1
		}
		return r
	}, strings.ToLower(strings.TrimSpace(code)))
}

// recoveryLen is a recovery code's length without its dash (10 characters
// of a 31-letter alphabet: about 50 bits).
const recoveryLen = 10

func newRecoveryCode() string {
	b := make([]byte, recoveryLen)
	for i := range b {
		b[i] = recoveryAlphabet[randIntn(len(recoveryAlphabet))]
	}
	return string(b[:5]) + "-" + string(b[5:])
}

func randIntn(n int) int {
	var x [1]byte
	for {
		if _, err := rand.Read(x[:]); err != nil {
			panic(err) // crypto/rand does not fail on supported platforms
		}
		if int(x[0]) < 256-256%n {
			return int(x[0]) % n
		}
	}
}

// newRecoveryCodes replaces userID's recovery codes with RecoveryCodes new
// ones, returned in clear to be shown once.
func (s *Store) newRecoveryCodes(ctx context.Context, tx *gorm.DB, userID int64) ([]string, error) {
	if err := tenant.Scope(ctx, tx).Where("user_id = ?", userID).Delete(&recoveryRow{}).Error; err != nil {
		return nil, err
	}
	codes := make([]string, RecoveryCodes)
	rows := make([]recoveryRow, RecoveryCodes)
	for i := range codes {
		codes[i] = newRecoveryCode()
		h, err := s.hash.HashSecret(normalizeRecovery(codes[i]))
		if err != nil {
			return nil, err
		}
		rows[i] = recoveryRow{TenantID: tenant.ID(ctx), UserID: userID, N: i + 1, CodeHash: h}
	}
	if err := tx.Create(&rows).Error; err != nil {
		return nil, err
	}
	return codes, nil
}

// spendRecovery marks the unused recovery code matching code as used and
// returns how many remain.
func (s *Store) spendRecovery(ctx context.Context, tx *gorm.DB, userID int64, code string) (int, bool, error) {
	code = normalizeRecovery(code)
	if len(code) != recoveryLen {
		return 0, false, nil
	}
	var rows []recoveryRow
	if err := tenant.Scope(ctx, s.db.ForUpdate(tx)).Where("user_id = ? AND used_at IS NULL", userID).Order("n").Find(&rows).Error; err != nil {
		return 0, false, err
	}
	for _, r := range rows {
		if s.hash.MatchesSecret(r.CodeHash, code) {
			if err := tenant.Scope(ctx, tx).Model(&recoveryRow{}).Where("user_id = ? AND n = ?", userID, r.N).Update("used_at", s.now.Now()).Error; err != nil {
				return 0, false, err
			}
			return len(rows) - 1, true, nil
		}
	}
	return 0, false, nil
}

// RegenerateRecovery replaces userID's recovery codes (the old ones stop
// working) and returns the new ones, to be shown once. Only a user with an
// authenticator has recovery codes (apperr.Conflict otherwise).
func (s *Store) RegenerateRecovery(ctx context.Context, userID int64) ([]string, error) {
	var codes []string
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		var rows []totpRow
		if err := tenant.Scope(ctx, s.db.ForUpdate(tx)).Where("user_id = ? AND confirmed_at IS NOT NULL", userID).Find(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return apperr.E(apperr.Conflict, "set up an authenticator first")
		}
		var err error
		if codes, err = s.newRecoveryCodes(ctx, tx, userID); err != nil {
			return err
		}
		return audit.Record(ctx, tx, entry(audit.MFARecoveryRegenerated, userID, audit.Success))
	})
	return codes, err
}

// Remove deletes userID's factors (authenticator app and passkeys) and
// recovery codes. actorID is who
// removes them: another user (an admin's reset) leaves the user a notice
// for their next sign-in. Removing nothing is no error (and no record).
func (s *Store) Remove(ctx context.Context, actor *audit.Actor, userID int64) error {
	return s.remove(ctx, actor, userID, true)
}

// RemoveTOTP is Remove of the authenticator app and recovery codes only
// (a user's own removal on the account page: their passkeys stay).
func (s *Store) RemoveTOTP(ctx context.Context, actor *audit.Actor, userID int64) error {
	return s.remove(ctx, actor, userID, false)
}

func (s *Store) remove(ctx context.Context, actor *audit.Actor, userID int64, passkeys bool) error {
	return s.db.Tx(ctx, func(tx *gorm.DB) error {
		res := tenant.Scope(ctx, tx).Where("user_id = ?", userID).Delete(&totpRow{})
		if res.Error != nil {
			return res.Error
		}
		if err := tenant.Scope(ctx, tx).Where("user_id = ?", userID).Delete(&recoveryRow{}).Error; err != nil {
			return err
		}
		var keys int64
		if passkeys {
			del := tenant.Scope(ctx, tx).Where("user_id = ?", userID).Delete(&passkeyRow{})
			if del.Error != nil {
				return del.Error
			}
			keys = del.RowsAffected
		}
		if res.RowsAffected == 0 && keys == 0 {
			return nil
		}
		if actor == nil || actor.UserID == nil || *actor.UserID != userID {
			n := noticeRow{TenantID: tenant.ID(ctx), UserID: userID, ResetAt: s.now.Now()}
			if err := tenant.Scope(ctx, tx).Where("user_id = ?", userID).Delete(&noticeRow{}).Error; err != nil {
				return err
			}
			if err := tx.Create(&n).Error; err != nil {
				return err
			}
		}
		e := entry(audit.MFARemoved, userID, audit.Success)
		e.Actor = actor
		return audit.Record(ctx, tx, e)
	})
}

// TakeResetNotice reports (once) whether an admin removed userID's factors
// since they last signed in.
func (s *Store) TakeResetNotice(ctx context.Context, userID int64) (bool, error) {
	res := tenant.Scope(ctx, s.db.DB).Where("user_id = ?", userID).Delete(&noticeRow{})
	return res.RowsAffected > 0, res.Error
}

// Policy returns the tenant's policy (PolicyOff when never set).
func (s *Store) Policy(ctx context.Context) (Policy, error) {
	var rows []policyRow
	if err := tenant.Scope(ctx, s.db.DB).Find(&rows).Error; err != nil {
		return "", fmt.Errorf("mfa: policy: %w", err)
	}
	if len(rows) == 0 {
		return PolicyOff, nil
	}
	return Policy(rows[0].Required), nil
}

// SetPolicy changes the tenant's policy (audited; setting the same policy
// again changes and records nothing).
func (s *Store) SetPolicy(ctx context.Context, p Policy) error {
	if _, err := ParsePolicy(string(p)); err != nil {
		return err
	}
	tid := tenant.ID(ctx)
	return s.db.Tx(ctx, func(tx *gorm.DB) error {
		var rows []policyRow
		if err := tenant.Scope(ctx, s.db.ForUpdate(tx)).Find(&rows).Error; err != nil {
			return err
		}
		switch {
		case len(rows) > 0 && rows[0].Required == string(p):
			return nil
		case len(rows) == 0 && p == PolicyOff:
			return nil
		case len(rows) == 0:
			if err := tx.Create(&policyRow{TenantID: tid, Required: string(p), UpdatedAt: s.now.Now()}).Error; err != nil {
				return err
			}
		default:
			if err := tenant.Scope(ctx, tx).Model(&policyRow{}).Where("1 = 1").
				Updates(map[string]any{"required": string(p), "updated_at": s.now.Now()}).Error; err != nil {
				return err
			}
		}
		typ, id := audit.Target(audit.TargetTenant, tid)
		return audit.Record(ctx, tx, audit.Entry{Action: audit.MFAPolicyChanged, TargetType: typ, TargetID: id})
	})
}

// Required reports whether the tenant's policy requires a second factor of
// a user with role who has none.
func (s *Store) Required(ctx context.Context, userID int64, role string) (bool, error) {
	p, err := s.Policy(ctx)
	if err != nil || !p.Covers(role) {
		return false, err
	}
	st, err := s.Status(ctx, userID)
	return !st.Has(), err
}
