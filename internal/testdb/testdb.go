// Package testdb gives tests a fresh, migrated database of either dialect,
// in the style of golang/pkgsite's internal/postgres test helper.
//
//   - SQLite: the embedded migrations are applied once into a template file
//     (keyed by a hash of the migrations, shared by every test process), and
//     each test gets a copy in its own temp dir.
//   - PostgreSQL (when FINSVC_TEST_DATABASE_URL is set): one template
//     database per migration hash is built under an advisory lock, so that
//     parallel `go test` package processes do not race, and each test gets
//     CREATE DATABASE … TEMPLATE, dropped in t.Cleanup.
//
// Contract tests run the same body on both dialects with Each (Hydra style).
package testdb

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/migrations"
)

// Environment variables naming the test services. Unset means "skip the
// tests that need it".
const (
	EnvDatabaseURL = "FINSVC_TEST_DATABASE_URL"
	EnvRedisURL    = "FINSVC_TEST_REDIS_URL"
	// EnvDatabaseDirectURL, when set, reaches the same server as
	// EnvDatabaseURL without a transaction pooler: the test databases are
	// created, templated and migrated through it (session locks, CREATE
	// DATABASE … TEMPLATE), and the tests' handles connect through the
	// pooler at EnvDatabaseURL. CI runs the PostgreSQL suite once this way,
	// behind PgBouncer in transaction mode.
	EnvDatabaseDirectURL = "FINSVC_TEST_DATABASE_DIRECT_URL"
	// EnvDialects, when set, is a comma-separated list of the dialects
	// tests run on (sqlite, postgres); the others' tests skip. CI's pass
	// through PgBouncer sets it to postgres: the SQLite tests ran in the
	// pass before it, and the pooler changes nothing for them.
	EnvDialects = "FINSVC_TEST_DIALECTS"
	// EnvDatabaseTag, when set (1 to 16 of a-z and 0-9), ends the name of
	// every PostgreSQL database testdb creates, its template included, so
	// that a CI run builds its own template and drops what it made by tag
	// when it exits.
	EnvDatabaseTag = "FINSVC_TEST_DATABASE_TAG"
)

// DirectURL is the admin URL: EnvDatabaseDirectURL, else EnvDatabaseURL.
func DirectURL() string {
	if u := os.Getenv(EnvDatabaseDirectURL); u != "" {
		return u
	}
	return os.Getenv(EnvDatabaseURL)
}

// Pooled reports whether EnvDatabaseURL goes through a transaction pooler
// (a direct URL is set beside it): the databases opened on it then send no
// prepared statements, as the service does behind one.
func Pooled() bool {
	u := os.Getenv(EnvDatabaseDirectURL)
	return u != "" && u != os.Getenv(EnvDatabaseURL)
}

// Dialects lists the dialects Each runs on: both, or those EnvDialects
// names. PostgreSQL subtests skip when FINSVC_TEST_DATABASE_URL is unset.
func Dialects() []string {
	var out []string
	for _, d := range []string{db.SQLite, db.Postgres} {
		if enabled(d) {
			out = append(out, d)
		}
	}
	return out
}

// enabled reports whether EnvDialects (unset: every dialect) names dialect.
func enabled(dialect string) bool {
	list := os.Getenv(EnvDialects)
	if list == "" {
		return true
	}
	for _, d := range strings.Split(list, ",") {
		if strings.TrimSpace(d) == dialect {
			return true
		}
	}
	return false
}

// skipUnlessEnabled skips t when EnvDialects leaves dialect out.
func skipUnlessEnabled(t testing.TB, dialect string) {
	t.Helper()
	if !enabled(dialect) {
		t.Skipf("testdb: %s=%s leaves out %s", EnvDialects, os.Getenv(EnvDialects), dialect)
	}
}

// tagSuffix is "_" and EnvDatabaseTag, or "" when it is unset.
var tagSuffix = sync.OnceValues(func() (string, error) {
	tag := os.Getenv(EnvDatabaseTag)
	if tag == "" {
		return "", nil
	}
	if len(tag) > 16 || strings.Trim(tag, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
		return "", fmt.Errorf("%s=%q: want 1 to 16 of a-z and 0-9", EnvDatabaseTag, tag)
	}
	return "_" + tag, nil
})

// Open returns a fresh migrated database of dialect (db.SQLite or
// db.Postgres), closed and removed when t ends.
func Open(t testing.TB, dialect string) *db.DB {
	t.Helper()
	switch dialect {
	case db.SQLite:
		return SQLite(t)
	case db.Postgres:
		return Postgres(t)
	}
	t.Fatalf("testdb: unknown dialect %q", dialect)
	return nil
}

// failEscapes fails t if a statement escaped an ambient transaction of d
// (db.ErrEscapedTx): run with a context that lost the transaction, it ran
// outside it or waited for its locks.
func failEscapes(t testing.TB, d *db.DB) {
	t.Cleanup(func() {
		if e := d.TakeEscapes(); len(e) > 0 {
			t.Errorf("testdb: %d statement(s) ran outside the ambient transaction their goroutine held open (db.ErrEscapedTx), first: %s", len(e), e[0])
		}
	})
}

// Each runs fn as the subtests "sqlite" and "postgres", each on its own
// fresh database. Use it for store contract tests: behaviour must be the
// same on both dialects.
func Each(t *testing.T, fn func(t *testing.T, d *db.DB)) {
	t.Helper()
	for _, dialect := range Dialects() {
		t.Run(dialect, func(t *testing.T) {
			fn(t, Open(t, dialect))
		})
	}
}

// RedisURL returns FINSVC_TEST_REDIS_URL, skipping the test when unset.
func RedisURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvRedisURL)
	if u == "" {
		t.Skipf("testdb: %s is not set; skipping Redis test (e.g. %s=redis://127.0.0.1:6379/0)", EnvRedisURL, EnvRedisURL)
	}
	return u
}

// NewTenant inserts tenant slug into d and returns a context carrying it,
// ready for tenant-scoped stores.
func NewTenant(t testing.TB, d *db.DB, slug string) (context.Context, *tenant.Tenant) {
	t.Helper()
	tn := &tenant.Tenant{Slug: slug, Name: slug}
	if err := d.WithContext(context.Background()).Create(tn).Error; err != nil {
		t.Fatalf("testdb: create tenant %q: %v", slug, err)
	}
	return tenant.NewContext(t.Context(), tn), tn
}

// Logger is the logger handed to test databases: quiet unless
// FINSVC_TEST_LOG is set.
func Logger() *slog.Logger {
	if os.Getenv("FINSVC_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// migrationsHash identifies the embedded migration set: a template built
// from other migrations is never reused.
var migrationsHash = sync.OnceValue(func() string {
	h := sha256.New()
	err := fs.WalkDir(migrations.All(), ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.All(), path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		panic(fmt.Sprintf("testdb: hash migrations: %v", err))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
})

func randomSuffix() string {
	var b [6]byte
	if _, err := io.ReadFull(rand.Reader, b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

func ctxTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
