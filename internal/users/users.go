// Package users stores a tenant's users: their login (email and argon2id
// password hash), display name and role. Every query is scoped to the
// tenant in the context (tenant.Scope); user ids are per tenant.
package users

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/counts"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/tenant"
)

// User is one account of a tenant. The password hash is never serialized.
type User struct {
	TenantID     int64     `gorm:"primaryKey;autoIncrement:false" json:"-"`
	ID           int64     `gorm:"primaryKey;autoIncrement:false" json:"id"`
	Email        string    `json:"email"`
	Name         string    `json:"name"`
	Role         string    `json:"role"`
	PasswordHash string    `json:"-"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	// DeactivatedAt is when the user was deactivated (nil: active). A
	// deactivated user cannot sign in, its tokens are revoked and refused,
	// and its webhook registrations receive nothing.
	DeactivatedAt *time.Time `json:"deactivated_at"`
	// PasswordExpiresAt is set while the password is a one-time password
	// (generated, not chosen): it works for one sign-in until then.
	PasswordExpiresAt *time.Time `json:"-"`
	// PasswordChangeRequired is set by the sign-in that used a one-time
	// password: the user must choose a password before anything else.
	PasswordChangeRequired bool `json:"-"`
}

// Active reports whether the user may sign in and act.
func (u *User) Active() bool { return u.DeactivatedAt == nil }

// TableName pins the table regardless of GORM naming settings.
func (User) TableName() string { return "users" }

// Sequence is the db.NextIDs sequence name for user ids.
const Sequence = "users"

// Field bounds.
const (
	maxNameLen  = 200
	maxEmailLen = 254
)

// Store reads and writes users of the tenant in the context.
type Store struct {
	db          *db.DB
	hasher      *hasher
	revoker     Revoker
	endSessions func(ctx context.Context, userID int64) error
	now         db.Clock
}

// Revoker ends everything a user holds outside this table: access and
// refresh tokens, authorization codes, consents and sign-in sessions
// (internal/oauth's store).
type Revoker interface {
	RevokeUser(ctx context.Context, userID int64) error
}

// RevokerFunc adapts a function to Revoker.
type RevokerFunc func(ctx context.Context, userID int64) error

// RevokeUser calls f.
func (f RevokerFunc) RevokeUser(ctx context.Context, userID int64) error { return f(ctx, userID) }

// WithRevoker sets what Deactivate calls to revoke the user's tokens.
func WithRevoker(r Revoker) Option { return func(s *Store) { s.revoker = r } }

// Option configures a Store.
type Option func(*Store)

// WithSessionEnder sets what IssueOneTimePassword calls to end the user's
// sign-in sessions (internal/oauth's store; tokens of apps stay).
func WithSessionEnder(f func(ctx context.Context, userID int64) error) Option {
	return func(s *Store) { s.endSessions = f }
}

// WithClock sets the store's clock (default: the time now), which decides
// when one-time passwords expire.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithHashParams sets the argon2id cost of new password hashes (default
// DefaultHashParams). Test harnesses pass a cheap set.
func WithHashParams(p HashParams) Option { return func(s *Store) { s.hasher = newHasher(p) } }

// NewStore returns a Store over d.
func NewStore(d *db.DB, opts ...Option) *Store {
	s := &Store{db: d}
	for _, o := range opts {
		o(s)
	}
	if s.hasher == nil {
		s.hasher = newHasher(DefaultHashParams)
	}
	return s
}

// NormalizeEmail lowercases and trims an email address; emails are unique
// per tenant in this form.
func NormalizeEmail(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// oneTimePasswordLen is the length of a generated password: 20 characters
// of a 56-letter alphabet, about 116 bits.
const oneTimePasswordLen = 20

// OneTimePasswordTTL is how long a generated password works (for one
// sign-in) after it was made.
const OneTimePasswordTTL = 72 * time.Hour

// noPassword marks the hash of an account without a usable password:
// after its one-time password was used and before the user chose one. No
// password verifies against a hash that starts with it. After a sign-in
// with a one-time password the mark is followed by that password's hash
// (spentOneTime), so that choosing the spent password itself is refused.
const noPassword = "!"

// unusable reports whether hash verifies no password.
func unusable(hash string) bool { return strings.HasPrefix(hash, noPassword) }

// spentOneTime is the hash of the one-time password u signed in with, kept
// until u chooses a password ("" when none is kept).
func spentOneTime(u *User) string { return strings.TrimPrefix(u.PasswordHash, noPassword) }

// CreateWithPassword is Create for the API, the console and the CLI: when
// password is empty a one-time password is generated and returned (once;
// only its hash is kept): it works for one sign-in within
// OneTimePasswordTTL, after which the user must choose a password. A given
// password must pass the policy (CheckPassword).
func (s *Store) CreateWithPassword(ctx context.Context, email, name, role, password string) (u *User, generated string, err error) {
	chosen := password != ""
	if !chosen {
		if generated, err = randomPassword(); err != nil {
			return nil, "", err
		}
		password = generated
	}
	u, err = s.create(ctx, email, name, role, password, chosen)
	if err != nil {
		return nil, "", err
	}
	return u, generated, nil
}

// randomPassword draws from letters and digits without the look-alikes
// (0/O, 1/l/I), so that a password read off a screen is typed right.
func randomPassword() (string, error) {
	const alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := make([]byte, oneTimePasswordLen)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			return "", fmt.Errorf("users: generate a password: %w", err)
		}
		b[i] = alphabet[n.Int64()]
	}
	return string(b), nil
}

// Update changes a user's name and/or role (nil: unchanged). Demoting the
// tenant's last active admin is refused (apperr.Invalid on role).
func (s *Store) Update(ctx context.Context, id int64, name, role *string) (_ *User, err error) {
	defer apperr.Wrap(&err, "users.Update(%d)", id)
	fe := apperr.FieldErrors{}
	if name != nil {
		n := strings.TrimSpace(*name)
		name = &n
		checkName(fe, n)
	}
	if role != nil {
		checkRole(fe, *role)
	}
	if err := fe.Err(apperr.Invalid, "invalid user"); err != nil {
		return nil, err
	}
	var out User
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		u, err := s.lockAdmins(ctx, tx, id)
		if err != nil {
			return err
		}
		set := map[string]any{"updated_at": s.now.Now()}
		if name != nil {
			set["name"] = *name
		}
		if role != nil && *role != u.Role {
			if u.Role == auth.RoleAdmin {
				if err := s.notLastAdmin(ctx, tx, u); err != nil {
					return err
				}
			}
			set["role"] = *role
		}
		if err := tenant.Scope(ctx, tx).Model(&User{}).Where("id = ?", id).Updates(set).Error; err != nil {
			return err
		}
		if _, changed := set["role"]; changed {
			typ, tid := audit.Target(audit.TargetUser, id)
			if err := audit.Record(ctx, tx, audit.Entry{Action: audit.UserRoleChanged, TargetType: typ, TargetID: tid}); err != nil {
				return err
			}
		}
		return tenant.Scope(ctx, tx).Where("id = ?", id).Take(&out).Error
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Deactivate deactivates user id: it can no longer sign in, its tokens
// and sessions are revoked (Revoker) and bearer checks refuse it at once,
// and its webhook registrations stop receiving events. The row stays. The
// tenant's last active admin cannot be deactivated (apperr.Invalid on
// role). Deactivating a deactivated user revokes again and succeeds, so a
// retry after a failure finishes the job.
func (s *Store) Deactivate(ctx context.Context, id int64) (err error) {
	defer apperr.Wrap(&err, "users.Deactivate(%d)", id)
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		u, err := s.lockAdmins(ctx, tx, id)
		if err != nil {
			return err
		}
		if !u.Active() {
			return nil
		}
		if u.Role == auth.RoleAdmin {
			if err := s.notLastAdmin(ctx, tx, u); err != nil {
				return err
			}
		}
		now := s.now.Now()
		if err := tenant.Scope(ctx, tx).Model(&User{}).Where("id = ?", id).
			Updates(map[string]any{"deactivated_at": now, "updated_at": now}).Error; err != nil {
			return err
		}
		typ, tid := audit.Target(audit.TargetUser, id)
		return audit.Record(ctx, tx, audit.Entry{Action: audit.UserDeactivated, TargetType: typ, TargetID: tid})
	})
	if err != nil || s.revoker == nil {
		return err
	}
	return s.revoker.RevokeUser(ctx, id)
}

// Reactivate undoes Deactivate: user id may sign in again with their
// password, and their webhook registrations receive events again. What
// Deactivate revoked (sessions, apps' tokens) stays revoked. Reactivating
// an active user changes nothing (and records nothing); the audit record
// names the context's principal.
func (s *Store) Reactivate(ctx context.Context, id int64) (_ *User, err error) {
	defer apperr.Wrap(&err, "users.Reactivate(%d)", id)
	now := s.now.Now()
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		res := tenant.Scope(ctx, tx).Model(&User{}).Where("id = ? AND deactivated_at IS NOT NULL", id).
			Updates(map[string]any{"deactivated_at": nil, "updated_at": now})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error // an active (or unknown) user: nothing done, nothing recorded
		}
		typ, tid := audit.Target(audit.TargetUser, id)
		return audit.Record(ctx, tx, audit.Entry{Action: audit.UserReactivated, TargetType: typ, TargetID: tid})
	})
	if err != nil {
		return nil, err
	}
	return s.Get(ctx, id)
}

// lockAdmins locks the tenant's active admins and user id, in id order
// (so that two admins demoting each other wait for one another instead of
// deadlocking), and returns user id. PostgreSQL re-reads a row it waited
// for, so a demotion that committed meanwhile is seen.
func (s *Store) lockAdmins(ctx context.Context, tx *gorm.DB, id int64) (*User, error) {
	var rows []User
	err := tenant.Scope(ctx, s.db.ForUpdate(tx)).
		Where("(role = ? AND deactivated_at IS NULL) OR id = ?", auth.RoleAdmin, id).Order("id").Find(&rows).Error
	if err != nil {
		return nil, err
	}
	for i := range rows {
		if rows[i].ID == id {
			return &rows[i], nil
		}
	}
	return nil, apperr.E(apperr.NotFound, "user not found")
}

// notLastAdmin refuses to take away u's admin rights when no other active
// admin is left (the rows are locked by lockAdmins).
func (s *Store) notLastAdmin(ctx context.Context, tx *gorm.DB, u *User) error {
	var others int64
	err := tenant.Scope(ctx, tx.Model(&User{})).
		Where("role = ? AND deactivated_at IS NULL AND id <> ?", auth.RoleAdmin, u.ID).Count(&others).Error
	if err != nil {
		return err
	}
	if others == 0 {
		return apperr.E(apperr.Invalid, "the tenant's last admin cannot be demoted or deactivated").
			WithField("role", "the tenant must keep at least one active admin; make another user admin first")
	}
	return nil
}

// Create adds a user with a password the caller chose to the current
// tenant. Invalid input is apperr.Invalid with field messages (email, name,
// role, password: the password policy, CheckPassword); an email already in
// use in the tenant is apperr.Conflict.
func (s *Store) Create(ctx context.Context, email, name, role, password string) (*User, error) {
	return s.create(ctx, email, name, role, password, true)
}

// create is Create; the policy applies to chosen passwords, not to the
// generated ones (long and random, only their length is checked), which
// are one-time passwords.
func (s *Store) create(ctx context.Context, email, name, role, password string, chosen bool) (_ *User, err error) {
	tid := tenant.ID(ctx)
	defer apperr.Wrap(&err, "users.Create(tenant %d)", tid)
	email = NormalizeEmail(email)
	name = strings.TrimSpace(name)
	fe := apperr.FieldErrors{}
	if msg := validateEmail(email); msg != "" {
		fe.Add("email", msg)
	}
	checkName(fe, name)
	checkRole(fe, role)
	if chosen {
		if err := s.checkPassword(ctx, fe, password, email); err != nil {
			return nil, err
		}
	} else if n := utf8.RuneCountInString(password); n < MinPasswordLen || n > MaxPasswordLen {
		fe.Add("password", fmt.Sprintf("must be %d to %d characters", MinPasswordLen, MaxPasswordLen))
	}
	if err := fe.Err(apperr.Invalid, "invalid user"); err != nil {
		return nil, err
	}
	// Hash before the transaction: on SQLite the transaction holds the
	// database write lock, and hashing is deliberately slow.
	hash, err := s.hasher.hash(password)
	if err != nil {
		return nil, err
	}
	u := &User{TenantID: tid, Email: email, Name: name, Role: role, PasswordHash: hash}
	if !chosen {
		until := s.now.Now().Add(OneTimePasswordTTL)
		u.PasswordExpiresAt = &until
	}
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		id, err := db.NextID(tx, tid, Sequence)
		if err != nil {
			return err
		}
		u.ID = id
		if err := tx.Create(u).Error; err != nil {
			return err
		}
		typ, tid := audit.Target(audit.TargetUser, id)
		return audit.Record(ctx, tx, audit.Entry{Action: audit.UserCreated, TargetType: typ, TargetID: tid})
	})
	if db.IsUniqueViolation(err) {
		return nil, apperr.E(apperr.Conflict, "a user with this email already exists").WithCode(apperr.CodeDuplicate).
			WithField("email", "is already registered")
	}
	if err != nil {
		return nil, err
	}
	return u, nil
}

// The field rules, one home each (Create, Update, SetPassword).

func checkName(fe apperr.FieldErrors, name string) {
	if utf8.RuneCountInString(name) > maxNameLen {
		fe.Add("name", fmt.Sprintf("must be at most %d characters", maxNameLen))
	}
}

func checkRole(fe apperr.FieldErrors, role string) {
	if !auth.ValidRole(role) {
		fe.Add("role", "must be one of admin, member, viewer")
	}
}

// checkPassword applies the password policy (CheckPassword) to a password
// chosen for the account email in the current tenant.
func (s *Store) checkPassword(ctx context.Context, fe apperr.FieldErrors, password, email string) error {
	t, err := s.tenantOf(ctx)
	if err != nil {
		return err
	}
	if msg := CheckPassword(password, email, t); msg != "" {
		fe.Add("password", msg)
	}
	return nil
}

// tenantOf is the current tenant with its slug and name, which the
// password policy needs (a context may carry the id alone).
func (s *Store) tenantOf(ctx context.Context) (*tenant.Tenant, error) {
	t := tenant.MustFromContext(ctx)
	if t.Slug != "" {
		return t, nil
	}
	var full tenant.Tenant
	if err := s.db.DB.WithContext(ctx).Where("id = ?", t.ID).Take(&full).Error; err != nil {
		return nil, fmt.Errorf("users: load tenant %d: %w", t.ID, err)
	}
	return &full, nil
}

func validateEmail(email string) string {
	if email == "" {
		return "is required"
	}
	if len(email) > maxEmailLen {
		return fmt.Sprintf("must be at most %d characters", maxEmailLen)
	}
	// The stored value must be the bare address: reject display names and
	// comments ("Bob <b@x.io>"), and domains without a dot except localhost
	// (demo users live at demo.localhost).
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email {
		return "must be a valid email address"
	}
	domain := email[strings.LastIndexByte(email, '@')+1:]
	if domain != "localhost" && (!strings.Contains(domain, ".") || strings.HasSuffix(domain, ".")) {
		return "must be a valid email address"
	}
	return ""
}

// Get returns the user with id in the current tenant, or apperr.NotFound.
func (s *Store) Get(ctx context.Context, id int64) (*User, error) {
	var u User
	err := tenant.Scope(ctx, s.db.DB).Where("id = ?", id).Take(&u).Error
	return one(&u, err, "users.Get(%d)", id)
}

// ByEmail returns the user with email (case-insensitive) in the current
// tenant, or apperr.NotFound.
func (s *Store) ByEmail(ctx context.Context, email string) (*User, error) {
	var u User
	err := tenant.Scope(ctx, s.db.DB).Where("email = ?", NormalizeEmail(email)).Take(&u).Error
	return one(&u, err, "users.ByEmail")
}

func one(u *User, err error, format string, args ...any) (*User, error) {
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return nil, apperr.E(apperr.NotFound, "user not found")
	case err != nil:
		return nil, fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), err)
	}
	return u, nil
}

// List returns one page of the current tenant's users ordered by id, and
// the total count: two queries (one past the end), with internal/page's rules.
func (s *Store) List(ctx context.Context, pr page.Request) ([]User, int64, error) {
	if err := pr.Validate(); err != nil {
		return nil, 0, err
	}
	total, err := counts.Total(ctx, s.db.DB, counts.Users)
	if err != nil {
		return nil, 0, fmt.Errorf("users.List: %w", err)
	}
	users := []User{}
	if pr.Beyond(total) {
		return users, total, nil
	}
	from, skip, ok, err := counts.Seek(ctx, s.db.DB, counts.Users.Kind, int64(pr.Offset()), total)
	if err != nil || !ok {
		return users, total, err
	}
	err = tenant.Scope(ctx, s.db.DB).Where("id >= ?", from).Order("id").Limit(pr.Limit).Offset(int(skip)).Find(&users).Error
	if err != nil {
		return nil, 0, fmt.Errorf("users.List: %w", err)
	}
	return users, total, nil
}

// Authenticate returns the user whose email and password match, or
// apperr.Unauthenticated with one message for every failure, so that the
// answer does not reveal whether the email exists. An unknown email still
// spends the time of one hash verification.
func (s *Store) Authenticate(ctx context.Context, email, password string) (u *User, err error) {
	defer func() { err = s.recordSignIn(ctx, email, u, err) }()
	return s.authenticate(ctx, email, password)
}

// recordSignIn records a sign-in attempt on its own (a failed one writes
// nothing else): a success by the user, a failure by nobody known, with
// the account as target when the email names one. The email itself is not
// recorded (a password typed into the wrong field would be). A sign-in
// that cannot be recorded fails.
func (s *Store) recordSignIn(ctx context.Context, email string, u *User, err error) error {
	e := audit.Entry{Action: audit.SignIn, TargetType: audit.TargetUser}
	switch {
	case err == nil:
		e.Actor = audit.UserActor(u.ID)
		_, e.TargetID = audit.Target(audit.TargetUser, u.ID)
	case apperr.Is(err, apperr.Unauthenticated):
		e.Outcome, e.Actor = audit.Failure, &audit.Actor{Type: audit.ActorAnonymous}
		if known, gerr := s.ByEmail(ctx, email); gerr == nil {
			_, e.TargetID = audit.Target(audit.TargetUser, known.ID)
		}
	default:
		return err
	}
	if rerr := audit.RecordAlone(ctx, s.db, e); rerr != nil {
		return rerr
	}
	return err
}

func (s *Store) authenticate(ctx context.Context, email, password string) (*User, error) {
	fail := apperr.E(apperr.Unauthenticated, "invalid email or password")
	if utf8.RuneCountInString(password) > MaxPasswordLen {
		return nil, fail
	}
	u, err := s.ByEmail(ctx, email)
	if err == nil && !u.Active() {
		// Same answer and the same time as an unknown email.
		s.hasher.verify(s.hasher.dummy(), password)
		return nil, fail
	}
	if apperr.Is(err, apperr.NotFound) {
		s.hasher.verify(s.hasher.dummy(), password)
		return nil, fail
	}
	if err != nil {
		return nil, err
	}
	if unusable(u.PasswordHash) {
		s.hasher.verify(s.hasher.dummy(), password)
		return nil, fail
	}
	ok, rehash, err := s.hasher.verify(u.PasswordHash, password)
	if err != nil {
		return nil, fmt.Errorf("users.Authenticate(user %d): %w", u.ID, err)
	}
	if !ok {
		return nil, fail
	}
	if u.PasswordExpiresAt != nil {
		return s.useOneTimePassword(ctx, u, fail)
	}
	if rehash {
		// Upgrade hashes made with older parameters while we know the
		// password. Best effort: the login succeeds either way.
		if h, err := s.hasher.hash(password); err == nil {
			if tenant.Scope(ctx, s.db.DB).Model(&User{}).Where("id = ?", u.ID).
				Update("password_hash", h).Error == nil {
				u.PasswordHash = h
			}
		}
	}
	return u, nil
}

// useOneTimePassword ends the one-time password u signed in with: it works
// once, before it expires, and the sign-in that uses it must lead to
// choosing a password (PasswordChangeRequired). Of two sign-ins racing
// with it, one wins: the update is conditional on the hash just verified.
func (s *Store) useOneTimePassword(ctx context.Context, u *User, fail error) (*User, error) {
	now := s.now.Now()
	if !now.Before(*u.PasswordExpiresAt) {
		return nil, fail
	}
	spent := noPassword + u.PasswordHash
	res := tenant.Scope(ctx, s.db.DB).Model(&User{}).Where("id = ? AND password_hash = ?", u.ID, u.PasswordHash).
		Updates(map[string]any{"password_hash": spent, "password_expires_at": nil, "password_change_required": true, "updated_at": now})
	if res.Error != nil {
		return nil, fmt.Errorf("users.Authenticate(user %d): use the one-time password: %w", u.ID, res.Error)
	}
	if res.RowsAffected == 0 {
		return nil, fail
	}
	u.PasswordHash, u.PasswordExpiresAt, u.PasswordChangeRequired = spent, nil, true
	return u, nil
}

// IssueOneTimePassword gives user id a new one-time password (an admin's
// reset: the user forgot theirs, or never signed in) and returns it, shown
// once, and when it expires. The user's current password stops working
// and their sign-in sessions end; their apps' tokens stay. A deactivated
// user gets none (apperr.Conflict).
func (s *Store) IssueOneTimePassword(ctx context.Context, id int64) (password string, expiresAt time.Time, err error) {
	defer apperr.Wrap(&err, "users.IssueOneTimePassword(%d)", id)
	u, err := s.Get(ctx, id)
	if err != nil {
		return "", time.Time{}, err
	}
	if !u.Active() {
		return "", time.Time{}, apperr.E(apperr.Conflict, "the user is deactivated; a one-time password would not let them sign in")
	}
	if password, err = randomPassword(); err != nil {
		return "", time.Time{}, err
	}
	hash, err := s.hasher.hash(password)
	if err != nil {
		return "", time.Time{}, err
	}
	now := s.now.Now()
	expiresAt = now.Add(OneTimePasswordTTL)
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		res := tenant.Scope(ctx, tx).Model(&User{}).Where("id = ? AND deactivated_at IS NULL", id).Updates(map[string]any{
			"password_hash": hash, "password_expires_at": expiresAt, "password_change_required": false, "updated_at": now,
		})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return apperr.E(apperr.Conflict, "the user is deactivated; a one-time password would not let them sign in")
		}
		typ, tid := audit.Target(audit.TargetUser, id)
		return audit.Record(ctx, tx, audit.Entry{Action: audit.OneTimePasswordIssued, TargetType: typ, TargetID: tid})
	})
	if err != nil {
		return "", time.Time{}, err
	}
	if s.endSessions != nil {
		if err := s.endSessions(ctx, id); err != nil {
			return "", time.Time{}, err
		}
	}
	return password, expiresAt, nil
}

// ChangePassword is a signed-in user's change of their own password: the
// current one must match (apperr.Invalid on "current_password"), except
// right after a sign-in with a one-time password (PasswordChangeRequired),
// and the new one must pass the policy (on "password"). Ending the user's
// other sessions is the caller's (it knows which one is current).
func (s *Store) ChangePassword(ctx context.Context, id int64, current, password string) (err error) {
	defer apperr.Wrap(&err, "users.ChangePassword(%d)", id)
	u, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	fe := apperr.FieldErrors{}
	if !u.PasswordChangeRequired {
		ok, err := s.matches(u, current)
		if err != nil {
			return err
		}
		if !ok {
			fe.Add("current_password", "is not your current password")
		} else if current == password {
			fe.Add("password", "must differ from your current password")
		}
	} else if spent := spentOneTime(u); spent != "" && utf8.RuneCountInString(password) <= MaxPasswordLen {
		// The one-time password was shown to whoever handed it over: kept,
		// it would work forever.
		same, _, err := s.hasher.verify(spent, password)
		if err != nil {
			return err
		}
		if same {
			fe.Add("password", "must differ from your one-time password")
		}
	}
	if err := s.checkPassword(ctx, fe, password, u.Email); err != nil {
		return err
	}
	if err := fe.Err(apperr.Invalid, "invalid password"); err != nil {
		return err
	}
	return s.storePassword(ctx, id, password, audit.PasswordChanged)
}

// matches reports whether password is u's current password (the check
// of sign-in: the hasher, the length bound; a user without a password
// matches none).
func (s *Store) matches(u *User, password string) (bool, error) {
	if unusable(u.PasswordHash) || utf8.RuneCountInString(password) > MaxPasswordLen {
		return false, nil
	}
	ok, _, err := s.hasher.verify(u.PasswordHash, password)
	return ok, err
}

// VerifyPassword is a signed-in user proving again that they are who the
// session says, before something sensitive (revealing a webhook secret):
// password must be user id's current password, else apperr.Unauthenticated
// with the refusal on "password". A one-time password that has been used
// is no password any more, and an active one is not accepted here (it is
// for signing in once). Throttling and recording the attempt are the
// callers' (internal/oauth, the registry).
func (s *Store) VerifyPassword(ctx context.Context, id int64, password string) (err error) {
	defer apperr.Wrap(&err, "users.VerifyPassword(%d)", id)
	u, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	ok := false
	if u.Active() && u.PasswordExpiresAt == nil {
		if ok, err = s.matches(u, password); err != nil {
			return err
		}
	}
	if !ok {
		return apperr.E(apperr.Unauthenticated, "the password is wrong").WithField("password", "is not the one you sign in with")
	}
	return nil
}

// storePassword replaces the password of user id with a chosen one
// (checked by the caller): it is no one-time password, and nothing more
// must be chosen. action is what the audit log records.
func (s *Store) storePassword(ctx context.Context, id int64, password, action string) error {
	hash, err := s.hasher.hash(password)
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *gorm.DB) error {
		res := tenant.Scope(ctx, tx).Model(&User{}).Where("id = ?", id).Updates(map[string]any{
			"password_hash": hash, "password_expires_at": nil, "password_change_required": false, "updated_at": s.now.Now(),
		})
		if res.Error != nil {
			return fmt.Errorf("users: set password of %d: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			return apperr.E(apperr.NotFound, "user not found")
		}
		typ, tid := audit.Target(audit.TargetUser, id)
		return audit.Record(ctx, tx, audit.Entry{Action: action, TargetType: typ, TargetID: tid})
	})
}

// SetPassword replaces the password of user id in the current tenant with
// one the caller chose: it must pass the policy (CheckPassword;
// apperr.Invalid on "password").
func (s *Store) SetPassword(ctx context.Context, id int64, password string) error {
	u, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	fe := apperr.FieldErrors{}
	if err := s.checkPassword(ctx, fe, password, u.Email); err != nil {
		return err
	}
	if err := fe.Err(apperr.Invalid, "invalid password"); err != nil {
		return err
	}
	return s.storePassword(ctx, id, password, audit.PasswordSet)
}
