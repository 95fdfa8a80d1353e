package testdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"github.com/finsvc/finsvc/internal/db"
)

// templateLockKey is the pg_advisory_lock key guarding template creation
// across test processes (an arbitrary constant: "finsvc" in ASCII).
const templateLockKey = 0x66696e737663

// staleTemplateAge: templates of other migration sets older than this are
// dropped when a new one is built. Younger ones may belong to a test process
// running against another checkout right now.
const staleTemplateAge = 24 * time.Hour

// Postgres returns a fresh migrated PostgreSQL database cloned from the
// per-process template, dropped when t ends. It skips t when
// FINSVC_TEST_DATABASE_URL is unset.
func Postgres(t testing.TB) *db.DB {
	t.Helper()
	pooledURL := os.Getenv(EnvDatabaseURL)
	adminURL := DirectURL()
	if pooledURL == "" {
		t.Skipf("testdb: %s is not set; skipping PostgreSQL test (e.g. %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable)", EnvDatabaseURL, EnvDatabaseURL)
	}
	skipUnlessEnabled(t, db.Postgres)
	admin, err := adminDB(adminURL)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	tmpl, err := pgTemplate(adminURL)
	if err != nil {
		t.Fatalf("testdb: postgres template: %v", err)
	}

	ctx, cancel := ctxTimeout(time.Minute)
	defer cancel()
	name, err := takeDatabase(admin, adminURL, tmpl)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() { dropBehind(admin, name) })
	u, err := withDatabase(pooledURL, name)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	d, err := db.Open(ctx, u, "", Logger(), db.BehindPooler(Pooled()))
	if err != nil {
		t.Fatalf("testdb: open %s: %v", name, err)
	}
	// Registered after the drop, so it runs before it (Cleanup is LIFO).
	t.Cleanup(func() { d.Close() })
	failEscapes(t, d)
	return d
}

var (
	adminMu    sync.Mutex
	adminConns = map[string]*sql.DB{}
	ownerConns = map[string]*sql.Conn{}
)

// adminDB is a small pool on the admin database for CREATE/DROP DATABASE.
// It lives for the whole test process, and so does the session on it that
// holds the process's owner lock (ahead.go): the databases the process
// makes are its own until that session ends with the process.
func adminDB(adminURL string) (*sql.DB, error) {
	adminMu.Lock()
	defer adminMu.Unlock()
	if a, ok := adminConns[adminURL]; ok {
		return a, nil
	}
	a, err := sql.Open("pgx", adminURL)
	if err != nil {
		return nil, fmt.Errorf("open admin database: %w", err)
	}
	a.SetMaxOpenConns(5)
	ctx, cancel := ctxTimeout(time.Minute)
	defer cancel()
	conn, err := a.Conn(ctx)
	if err == nil {
		_, err = conn.ExecContext(ctx, `SELECT pg_advisory_lock($1, $2)`, ownerLockClass, processOwner())
	}
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("owner lock on the admin database: %w", err)
	}
	ownerConns[adminURL] = conn
	adminConns[adminURL] = a
	return a, nil
}

var (
	tmplMu   sync.Mutex
	tmplDone = map[string]string{}
)

// pgTemplate returns the name of the migrated template database for the
// current migrations, building it if no process has yet.
func pgTemplate(adminURL string) (string, error) {
	tmplMu.Lock()
	defer tmplMu.Unlock()
	if name, ok := tmplDone[adminURL]; ok {
		return name, nil
	}
	name, err := buildTemplate(adminURL)
	if err != nil {
		return "", err
	}
	tmplDone[adminURL] = name
	if admin, err := adminDB(adminURL); err == nil {
		ctx, cancel := ctxTimeout(time.Minute)
		dropLeftovers(ctx, admin, time.Now())
		cancel()
	}
	return name, nil
}

func buildTemplate(adminURL string) (string, error) {
	ctx, cancel := ctxTimeout(5 * time.Minute)
	defer cancel()
	admin, err := adminDB(adminURL)
	if err != nil {
		return "", err
	}
	// The advisory lock is per session, so take and release it on one
	// dedicated connection.
	conn, err := admin.Conn(ctx)
	if err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, templateLockKey); err != nil {
		return "", fmt.Errorf("advisory lock: %w", err)
	}
	defer conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, templateLockKey)

	tag, err := tagSuffix()
	if err != nil {
		return "", err
	}
	name := "finsvc_tmpl_" + migrationsHash() + tag
	var exists bool
	if err := conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", fmt.Errorf("look up template: %w", err)
	}
	if exists {
		return name, nil
	}

	// Build under a temporary name and rename when complete, so that a
	// process killed mid-migration never leaves a half-built template.
	build := name + "_build"
	if _, err := conn.ExecContext(ctx, `DROP DATABASE IF EXISTS `+quoteIdent(build)+` WITH (FORCE)`); err != nil {
		return "", fmt.Errorf("drop stale build: %w", err)
	}
	if _, err := conn.ExecContext(ctx, `CREATE DATABASE `+quoteIdent(build)); err != nil {
		return "", fmt.Errorf("create %s: %w", build, err)
	}
	u, err := withDatabase(adminURL, build)
	if err != nil {
		return "", err
	}
	d, err := db.Open(ctx, u, "", Logger())
	if err != nil {
		return "", fmt.Errorf("open %s: %w", build, err)
	}
	err = d.Migrate(ctx)
	d.Close()
	if err != nil {
		return "", err
	}
	// FORCE-less rename needs no other session on the database; ours just
	// closed but the backends may not have exited yet.
	if _, err := conn.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, build); err != nil {
		return "", fmt.Errorf("disconnect %s: %w", build, err)
	}
	if err := retryInUse(ctx, func() error {
		_, err := conn.ExecContext(ctx, `ALTER DATABASE `+quoteIdent(build)+` RENAME TO `+quoteIdent(name))
		return err
	}); err != nil {
		return "", fmt.Errorf("publish template: %w", err)
	}
	comment := "finsvc test template " + time.Now().UTC().Format(time.RFC3339)
	if _, err := conn.ExecContext(ctx, `COMMENT ON DATABASE `+quoteIdent(name)+` IS '`+comment+`'`); err != nil {
		return "", fmt.Errorf("comment template: %w", err)
	}
	pruneTemplates(ctx, conn, name)
	return name, nil
}

// pruneTemplates drops templates of older migration sets, best effort.
func pruneTemplates(ctx context.Context, conn *sql.Conn, keep string) {
	rows, err := conn.QueryContext(ctx, `SELECT datname, COALESCE(shobj_description(oid, 'pg_database'), '')
FROM pg_database WHERE datname LIKE 'finsvc\_tmpl\_%' AND datname <> $1`, keep)
	if err != nil {
		return
	}
	var stale []string
	for rows.Next() {
		var name, comment string
		if rows.Scan(&name, &comment) != nil {
			continue
		}
		created, err := time.Parse(time.RFC3339, strings.TrimPrefix(comment, "finsvc test template "))
		if err != nil || time.Since(created) > staleTemplateAge {
			stale = append(stale, name)
		}
	}
	rows.Close()
	for _, name := range stale {
		conn.ExecContext(ctx, `DROP DATABASE IF EXISTS `+quoteIdent(name)+` WITH (FORCE)`)
	}
}

func createDatabase(ctx context.Context, admin *sql.DB, name, tmpl string) error {
	err := retryInUse(ctx, func() error {
		_, err := admin.ExecContext(ctx, `CREATE DATABASE `+quoteIdent(name)+` TEMPLATE `+quoteIdent(tmpl))
		return err
	})
	if err != nil {
		return fmt.Errorf("create %s from %s: %w", name, tmpl, err)
	}
	return nil
}

// retryInUse retries fn while PostgreSQL reports the database as in use
// (SQLSTATE 55006): a template may be briefly connected to while another
// process publishes it.
func retryInUse(ctx context.Context, fn func() error) error {
	for i := 0; ; i++ {
		err := fn()
		var pg *pgconn.PgError
		if err == nil || !errors.As(err, &pg) || pg.Code != "55006" || i >= 50 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// withDatabase returns adminURL pointing at database name.
func withDatabase(adminURL, name string) (string, error) {
	u, err := url.Parse(adminURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("%s must be a postgres:// URL", EnvDatabaseURL)
	}
	u.Path = "/" + name
	return u.String(), nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// URLs returns the pooled and the direct URL of the PostgreSQL database d
// is connected to (the same when no pooler is configured): tests that need
// a session (LISTEN, advisory locks, ALTER DATABASE) use the direct one.
func URLs(t testing.TB, d *db.DB) (pooled, direct string) {
	t.Helper()
	var name string
	if err := d.Raw("SELECT current_database()").Scan(&name).Error; err != nil {
		t.Fatalf("testdb: current database: %v", err)
	}
	var err error
	if pooled, err = withDatabase(os.Getenv(EnvDatabaseURL), name); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	if direct, err = withDatabase(DirectURL(), name); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return pooled, direct
}

// EmptyPostgres creates an empty PostgreSQL database (no migrations: for
// tests of what migrates it), dropped when t ends, and returns its pooled
// and direct URLs. It skips t when FINSVC_TEST_DATABASE_URL is unset.
func EmptyPostgres(t testing.TB) (pooled, direct string) {
	t.Helper()
	if os.Getenv(EnvDatabaseURL) == "" {
		t.Skipf("testdb: %s is not set; skipping PostgreSQL test", EnvDatabaseURL)
	}
	skipUnlessEnabled(t, db.Postgres)
	admin, err := adminDB(DirectURL())
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	ctx, cancel := ctxTimeout(time.Minute)
	defer cancel()
	tag, err := tagSuffix()
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	name := "finsvc_empty_" + randomSuffix() + tag
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+quoteIdent(name)); err != nil {
		t.Fatalf("testdb: create %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := ctxTimeout(time.Minute)
		defer cancel()
		if _, err := admin.ExecContext(ctx, `DROP DATABASE IF EXISTS `+quoteIdent(name)+` WITH (FORCE)`); err != nil {
			t.Errorf("testdb: drop %s: %v", name, err)
		}
	})
	if pooled, err = withDatabase(os.Getenv(EnvDatabaseURL), name); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	if direct, err = withDatabase(DirectURL(), name); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return pooled, direct
}
