package tenant

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/db"
)

// ValidSlug reports whether s is a valid tenant slug: 2–63 of a-z, 0-9 and
// "-", not starting or ending with "-" (it is a DNS label of the tenant's
// host name).
// It runs on every request (the tenant from the Host), so it is a loop
// rather than a regular expression.
func ValidSlug(s string) bool {
	if len(s) < 2 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

const (
	// DefaultCacheTTL bounds how stale a tenant lookup may be. Tenant
	// resolution runs on every request, while tenants change rarely.
	DefaultCacheTTL = 30 * time.Second
	// negativeTTL is shorter: a tenant created by another process (the
	// CLI, another replica) becomes reachable quickly.
	negativeTTL = 2 * time.Second
	// maxCacheEntries caps memory when clients send many unknown hosts.
	maxCacheEntries = 10000
	maxNameLen      = 200
)

// Store reads and creates tenants, with a small in-process cache of
// lookups by slug.
type Store struct {
	db  *db.DB
	ttl time.Duration
	now func() time.Time

	mu    sync.Mutex
	cache map[string]cacheEntry
}

type cacheEntry struct {
	t       *Tenant // nil: known not to exist
	expires time.Time
}

// StoreOption configures a Store.
type StoreOption func(*Store)

// WithCacheTTL sets how long a found tenant is cached (0 disables caching).
func WithCacheTTL(ttl time.Duration) StoreOption { return func(s *Store) { s.ttl = ttl } }

// WithClock replaces time.Now (tests).
func WithClock(now func() time.Time) StoreOption { return func(s *Store) { s.now = now } }

// NewStore returns a Store over d.
func NewStore(d *db.DB, opts ...StoreOption) *Store {
	s := &Store{db: d, ttl: DefaultCacheTTL, now: time.Now, cache: map[string]cacheEntry{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Create adds a tenant. An invalid slug or name is apperr.Invalid with
// field messages; a taken slug is apperr.Conflict. An empty name defaults to
// the slug.
func (s *Store) Create(ctx context.Context, slug, name string) (_ *Tenant, err error) {
	defer apperr.Wrap(&err, "tenant.Create(%q)", slug)
	name = strings.TrimSpace(name)
	if name == "" {
		name = slug
	}
	fe := apperr.FieldErrors{}
	if !ValidSlug(slug) {
		fe.Add("slug", "must be 2 to 63 characters of a-z, 0-9 and -, not starting or ending with -")
	}
	if len(name) > maxNameLen {
		fe.Add("name", fmt.Sprintf("must be at most %d characters", maxNameLen))
	}
	if err := fe.Err(apperr.Invalid, "invalid tenant"); err != nil {
		return nil, err
	}
	t := &Tenant{Slug: slug, Name: name}
	if err := s.db.WithContext(ctx).Create(t).Error; err != nil {
		if db.IsUniqueViolation(err) {
			return nil, apperr.Ef(apperr.Conflict, "tenant %q already exists", slug).WithCode(apperr.CodeDuplicate).
				WithField("slug", "is already taken")
		}
		return nil, err
	}
	s.forget(slug)
	return t, nil
}

// BySlug returns the tenant with slug, or apperr.NotFound. Results (found or
// not) are cached briefly; the returned value is the caller's own copy.
func (s *Store) BySlug(ctx context.Context, slug string) (*Tenant, error) {
	if !ValidSlug(slug) {
		// Never reaches the database, never fills the cache.
		return nil, apperr.E(apperr.NotFound, "tenant not found")
	}
	if t, ok := s.cached(slug); ok {
		if t == nil {
			return nil, apperr.E(apperr.NotFound, "tenant not found")
		}
		return t, nil
	}
	var t Tenant
	err := s.db.WithContext(ctx).Where("slug = ?", slug).Take(&t).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		s.store(slug, nil, negativeTTL)
		return nil, apperr.E(apperr.NotFound, "tenant not found")
	case err != nil:
		return nil, fmt.Errorf("tenant.BySlug(%q): %w", slug, err)
	}
	s.store(slug, &t, s.ttl)
	c := t
	return &c, nil
}

// ByID returns the tenant with id, or apperr.NotFound (uncached: used off
// the request path, e.g. by workers).
func (s *Store) ByID(ctx context.Context, id int64) (*Tenant, error) {
	var t Tenant
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&t).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return nil, apperr.E(apperr.NotFound, "tenant not found")
	case err != nil:
		return nil, fmt.Errorf("tenant.ByID(%d): %w", id, err)
	}
	return &t, nil
}

func (s *Store) cached(slug string) (*Tenant, bool) {
	if s.ttl <= 0 {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.cache[slug]
	if !ok || !s.now().Before(e.expires) {
		return nil, false
	}
	if e.t == nil {
		return nil, true
	}
	c := *e.t
	return &c, true
}

func (s *Store) store(slug string, t *Tenant, ttl time.Duration) {
	if s.ttl <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.cache) >= maxCacheEntries {
		// Crude but bounded: drop everything rather than track recency.
		clear(s.cache)
	}
	var c *Tenant
	if t != nil {
		cp := *t
		c = &cp
	}
	s.cache[slug] = cacheEntry{t: c, expires: s.now().Add(ttl)}
}

func (s *Store) forget(slug string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.cache, slug)
}
