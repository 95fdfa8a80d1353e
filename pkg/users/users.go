// Package users stores a tenant's users: their login (email and argon2id
// password hash), display name and role. Every query is scoped to the
// tenant in the context (tenant.Scope); user ids are per tenant.
package users

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/pkg/apperr"
	"github.com/finsvc/finsvc/pkg/auth"
	"github.com/finsvc/finsvc/pkg/counts"
	"github.com/finsvc/finsvc/pkg/db"
	"github.com/finsvc/finsvc/pkg/page"
	"github.com/finsvc/finsvc/pkg/tenant"
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
}

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
	db     *db.DB
	hasher *hasher
}

// Option configures a Store.
type Option func(*Store)

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

// Create adds a user to the current tenant. Invalid input is apperr.Invalid
// with field messages (email, name, role, password); an email already in use
// in the tenant is apperr.Conflict.
func (s *Store) Create(ctx context.Context, email, name, role, password string) (_ *User, err error) {
	tid := tenant.ID(ctx)
	defer apperr.Wrap(&err, "users.Create(tenant %d)", tid)
	email = NormalizeEmail(email)
	name = strings.TrimSpace(name)
	fe := apperr.FieldErrors{}
	if msg := validateEmail(email); msg != "" {
		fe.Add("email", msg)
	}
	if utf8.RuneCountInString(name) > maxNameLen {
		fe.Add("name", fmt.Sprintf("must be at most %d characters", maxNameLen))
	}
	if !auth.ValidRole(role) {
		fe.Add("role", "must be one of admin, member, viewer")
	}
	if n := utf8.RuneCountInString(password); n < MinPasswordLen || len(password) > MaxPasswordLen {
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
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		id, err := db.NextID(tx, tid, Sequence)
		if err != nil {
			return err
		}
		u.ID = id
		return tx.Create(u).Error
	})
	if db.IsUniqueViolation(err) {
		return nil, apperr.E(apperr.Conflict, "a user with this email already exists").
			WithField("email", "is already registered")
	}
	if err != nil {
		return nil, err
	}
	return u, nil
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
// the total count: two queries (one past the end), with pkg/page's rules.
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
	from, skip, ok, err := counts.Seek(ctx, s.db.DB, counts.Users.Kind, int64(pr.Offset()))
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
func (s *Store) Authenticate(ctx context.Context, email, password string) (*User, error) {
	fail := apperr.E(apperr.Unauthenticated, "invalid email or password")
	if len(password) > MaxPasswordLen {
		return nil, fail
	}
	u, err := s.ByEmail(ctx, email)
	if apperr.Is(err, apperr.NotFound) {
		s.hasher.verify(s.hasher.dummy(), password)
		return nil, fail
	}
	if err != nil {
		return nil, err
	}
	ok, rehash, err := s.hasher.verify(u.PasswordHash, password)
	if err != nil {
		return nil, fmt.Errorf("users.Authenticate(user %d): %w", u.ID, err)
	}
	if !ok {
		return nil, fail
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

// SetPassword replaces the password of user id in the current tenant.
func (s *Store) SetPassword(ctx context.Context, id int64, password string) error {
	if n := utf8.RuneCountInString(password); n < MinPasswordLen || len(password) > MaxPasswordLen {
		return apperr.E(apperr.Invalid, "invalid password").
			WithField("password", fmt.Sprintf("must be %d to %d characters", MinPasswordLen, MaxPasswordLen))
	}
	hash, err := s.hasher.hash(password)
	if err != nil {
		return err
	}
	res := tenant.Scope(ctx, s.db.DB).Model(&User{}).Where("id = ?", id).Update("password_hash", hash)
	if res.Error != nil {
		return fmt.Errorf("users.SetPassword(%d): %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return apperr.E(apperr.NotFound, "user not found")
	}
	return nil
}
