// Package db opens the service's database (PostgreSQL in production, SQLite
// as the embedded default), applies the embedded migrations and provides the
// few dialect-aware helpers that stores need: transactions, row locks,
// per-tenant id allocation and constraint-violation checks.
package db

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Dialects.
const (
	Postgres = "postgres"
	SQLite   = "sqlite"
)

// SQLiteFile is the database file name inside the data directory.
const SQLiteFile = "finsvc.db"

// Pool settings. PostgreSQL connections are comparatively expensive and the
// server caps them (max_connections, default 100), so each replica keeps a
// bounded pool and recycles connections so that a failover or a pgbouncer
// restart is picked up. SQLite connections are cheap; WAL lets readers run
// beside the single writer, and busy_timeout queues writers. As many
// PostgreSQL connections may stay idle as may be open: with fewer, a load
// that keeps more than the idle limit busy (32 webhook attempts, each with
// its own statements) closes a connection every time one comes back over
// the limit and opens another moments later, a new server backend each
// time; in BenchmarkFairThroughput that was one connection per six
// deliveries and halved the throughput (BENCHMARKS.md, "Webhook delivery").
// Idle connections still close after pgConnMaxIdleTime.
//
// A SQLite writer waits at most sqliteBusyTimeout for the write lock, then
// fails with SQLITE_BUSY, which the API answers 503 with Retry-After: a wait
// an interactive client still sees through (most time out after 10-30 s),
// and longer than the longest lock the service itself takes (the
// statistics refresh, about 4 s on a file with a million clients), so that
// a request waits that out instead of failing.
const (
	pgMaxOpenConns     = 20
	pgMaxIdleConns     = 20
	pgConnMaxLifetime  = 30 * time.Minute
	pgConnMaxIdleTime  = 5 * time.Minute
	sqliteMaxOpenConns = 8
	sqliteBusyTimeout  = 5 * time.Second
	openPingTimeout    = 10 * time.Second
	slowQueryThreshold = 500 * time.Millisecond
)

// DB is the service's database handle. Dialect is Postgres or SQLite; code
// that must differ per dialect (row locks, SKIP LOCKED) asks it rather than
// sniffing the driver.
type DB struct {
	*gorm.DB
	Dialect string

	log      *slog.Logger // may be nil for a DB built by hand
	prepared bool         // named server-side prepared statements are allowed
	faults   *faults      // test hooks; nil for a DB built by hand
}

// Prepared reports whether the connections may keep named server-side
// prepared statements across transactions (GORM's PrepareStmt, pgx's
// statement cache). On PostgreSQL they may unless a transaction pooler is
// declared (BehindPooler): behind PgBouncer in transaction mode a
// statement prepared on one server connection is not there on the next.
// A URL that names a query mode itself decides for itself. SQLite's
// statements live in this process: always allowed.
func (d *DB) Prepared() bool { return d != nil && d.prepared }

// queryExecModeParam is pgx's connection-string parameter for how queries
// are sent.
const queryExecModeParam = "default_query_exec_mode"

// An OpenOption adjusts Open.
type OpenOption func(*openOptions)

type openOptions struct{ pooled bool }

// BehindPooler declares that the URL reaches PostgreSQL through a
// transaction pooler (PgBouncer in transaction mode): queries are sent in
// pgx's exec mode (one round trip, an unnamed statement, nothing left on
// the server connection) unless the URL names a mode itself. Without it
// pgx keeps its default, the statement cache, which saves a parse and a
// plan on every repeated query.
func BehindPooler(pooled bool) OpenOption { return func(o *openOptions) { o.pooled = pooled } }

// withQueryExecMode returns dsn with pgx's query mode set to exec when it is
// pooled and the DSN chose no mode itself, and whether the resulting mode
// keeps named prepared statements (pgx's default, cache_statement, does).
func withQueryExecMode(dsn string, pooled bool) (string, bool) {
	mode := ""
	isURL := strings.Contains(dsn, "://")
	var u *url.URL
	if isURL {
		if parsed, err := url.Parse(dsn); err == nil {
			u = parsed
			mode = u.Query().Get(queryExecModeParam)
		}
	} else {
		for _, f := range strings.Fields(dsn) {
			if k, v, ok := strings.Cut(f, "="); ok && k == queryExecModeParam {
				mode = v
			}
		}
	}
	switch {
	case mode != "":
		return dsn, mode == "cache_statement" || mode == "cache_describe"
	case !pooled:
		return dsn, true
	case u != nil:
		q := u.Query()
		q.Set(queryExecModeParam, "exec")
		u.RawQuery = q.Encode()
		return u.String(), false
	case isURL: // not parseable: pgx will say why
		return dsn, false
	}
	return dsn + " " + queryExecModeParam + "=exec", false
}

func (d *DB) logger() *slog.Logger {
	if d.log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.log
}

// Open connects to databaseURL, or, when it is empty, to the SQLite file
// <dataDir>/finsvc.db (creating dataDir). Accepted URLs:
//
//	postgres://… or postgresql://… (or a libpq "key=value" DSN)
//	sqlite:///abs/path.db, sqlite:rel/path.db, file:path.db
//
// The returned handle has been pinged.
func Open(ctx context.Context, databaseURL, dataDir string, logger *slog.Logger, opts ...OpenOption) (*DB, error) {
	var o openOptions
	for _, opt := range opts {
		opt(&o)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	dialect, target, err := parseURL(databaseURL, dataDir)
	if err != nil {
		return nil, err
	}
	cfg := &gorm.Config{
		Logger: newGormLogger(logger, slowQueryThreshold),
		// The times GORM fills itself (created_at, updated_at) are stored
		// like every other.
		NowFunc: Clock(nil).Now,
		// Constraint errors are inspected with IsUniqueViolation and
		// friends; keep the driver errors intact.
		TranslateError: false,
	}

	var d *DB
	switch dialect {
	case Postgres:
		d, err = openPostgres(target, o.pooled, cfg)
	case SQLite:
		d, err = openSQLite(target, cfg)
	}
	if err != nil {
		return nil, err
	}
	d.log = logger
	pctx, cancel := context.WithTimeout(ctx, openPingTimeout)
	defer cancel()
	if err := d.Ping(pctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("db: connect to %s: %w", dialect, err)
	}
	d.optimizeOnOpen(ctx)
	return d, nil
}

func openPostgres(dsn string, pooled bool, cfg *gorm.Config) (*DB, error) {
	dsn, prepared := withQueryExecMode(dsn, pooled)
	pcfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("db: open postgres: %w", err)
	}
	// Every connection counts the warnings that say a commit was
	// acknowledged without the synchronous standby (outcomeTx).
	pcfg.OnNotice = countSyncRepCancel
	g, err := gorm.Open(postgres.New(postgres.Config{Conn: stdlib.OpenDB(*pcfg)}), cfg)
	if err != nil {
		return nil, fmt.Errorf("db: open postgres: %w", err)
	}
	sqlDB, err := g.DB()
	if err != nil {
		return nil, fmt.Errorf("db: open postgres: %w", err)
	}
	sqlDB.SetMaxOpenConns(pgMaxOpenConns)
	sqlDB.SetMaxIdleConns(pgMaxIdleConns)
	sqlDB.SetConnMaxLifetime(pgConnMaxLifetime)
	sqlDB.SetConnMaxIdleTime(pgConnMaxIdleTime)
	joinAmbient(g, Postgres)
	return &DB{DB: g, Dialect: Postgres, prepared: prepared, faults: new(faults)}, nil
}

func openSQLite(path string, cfg *gorm.Config) (*DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("db: create data directory: %w", err)
	}
	// Create the file owner-only before SQLite does (it would use 0644):
	// it holds password hashes. SQLite gives -wal and -shm the same mode.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("db: create sqlite file: %w", err)
	}
	f.Close()
	g, err := gorm.Open(sqlite.Open(SQLiteDSN(path)), cfg)
	if err != nil {
		return nil, fmt.Errorf("db: open sqlite %s: %w", path, err)
	}
	sqlDB, err := g.DB()
	if err != nil {
		return nil, fmt.Errorf("db: open sqlite %s: %w", path, err)
	}
	sqlDB.SetMaxOpenConns(sqliteMaxOpenConns)
	sqlDB.SetMaxIdleConns(sqliteMaxOpenConns)
	joinAmbient(g, SQLite)
	return &DB{DB: g, Dialect: SQLite, prepared: true, faults: new(faults)}, nil // SQLite statements live in this process
}

// SQLiteDSN returns the glebarez/go-sqlite DSN for the file at path. Every
// connection gets:
//   - busy_timeout first, so that the following pragmas and every write
//     wait for a competing writer instead of failing with SQLITE_BUSY;
//   - WAL, so that readers never block the writer or each other;
//   - synchronous=NORMAL, durable across application crashes in WAL mode;
//   - foreign_keys, off by default in SQLite and needed for ON DELETE CASCADE;
//   - _txlock=immediate: every BEGIN takes the write lock at once. That lock
//     is SQLite's stand-in for SELECT … FOR UPDATE (ARCHITECTURE.md, Data and storage), and it
//     avoids the SQLITE_BUSY a deferred transaction gets when it upgrades
//     from reader to writer while another writer holds the lock.
//
// Do not add _time_format: the driver returns early after it and would then
// silently ignore _txlock.
func SQLiteDSN(path string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", sqliteBusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	return path + "?" + q.Encode()
}

// parseURL maps a database URL to (dialect, driver DSN or file path).
func parseURL(databaseURL, dataDir string) (dialect, target string, err error) {
	u := strings.TrimSpace(databaseURL)
	switch {
	case u == "":
		if dataDir == "" {
			return "", "", errors.New("db: neither a database URL nor a data directory is set")
		}
		return SQLite, filepath.Join(dataDir, SQLiteFile), nil
	case strings.HasPrefix(u, "sqlite://"):
		// sqlite:///abs/path → /abs/path; sqlite://rel/path → rel/path
		return sqlitePath(strings.TrimPrefix(u, "sqlite://"))
	case strings.HasPrefix(u, "sqlite:"):
		return sqlitePath(strings.TrimPrefix(u, "sqlite:"))
	case strings.HasPrefix(u, "file:"):
		return sqlitePath(strings.TrimPrefix(u, "file:"))
	case strings.HasPrefix(u, "postgres://"), strings.HasPrefix(u, "postgresql://"),
		strings.Contains(u, "=") && !strings.Contains(u, "://"):
		return Postgres, u, nil
	}
	scheme, _, _ := strings.Cut(u, ":")
	return "", "", fmt.Errorf("db: unsupported database URL scheme %q (want postgres:// or sqlite:)", scheme)
}

func sqlitePath(p string) (string, string, error) {
	if p == "" || strings.ContainsAny(p, "?#") {
		return "", "", fmt.Errorf("db: invalid sqlite path %q (no query parameters: pragmas are fixed)", p)
	}
	return SQLite, p, nil
}

// joinAmbient makes every handle derived from g run its statements on the
// context's ambient transaction, when there is one (InTx).
func joinAmbient(g *gorm.DB, dialect string) {
	p := &ambientPool{pool: g.ConnPool, postgres: dialect == Postgres}
	g.ConnPool = p
	g.Statement.ConnPool = p
}

// Ping checks that the database answers (readiness probe).
func (d *DB) Ping(ctx context.Context) error {
	sqlDB, err := d.DB.DB()
	if err != nil {
		return err
	}
	return sqlDB.PingContext(ctx)
}

// Close releases the connection pool.
func (d *DB) Close() error {
	sqlDB, err := d.DB.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// ForUpdate adds FOR UPDATE to tx's SELECT on PostgreSQL. On SQLite it adds
// nothing: a transaction opened by Tx already holds the write lock, which
// serializes writers just as the row lock would.
func (d *DB) ForUpdate(tx *gorm.DB) *gorm.DB {
	if d.Dialect == Postgres {
		return tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
	}
	return tx
}
