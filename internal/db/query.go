package db

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"
)

// A Query is a hot read written once as SQL, with ? placeholders, and run
// the cheapest way each handle allows. On PostgreSQL outside a transaction
// it runs on a pgx connection borrowed from the pool ($n placeholders,
// computed once), skipping both GORM's statement building and
// database/sql's row and value conversion: together most of what the full
// chain of GET /clients/{id} spent beyond the round trip itself
// (BENCHMARKS.md, "The hot path at the stack limit"). Anywhere else (SQLite,
// a transaction, a traced request) it runs through GORM's Raw, so the one
// statement serves both dialects and counts as one query (CountQueries).
//
// Reads of tenant data use it through tenant.Query, which supplies the
// tenant condition as tenant.Scope does for GORM-built queries. It is for
// the few reads measured to need it; every other read is built by GORM.
// Arguments are scalars (GORM's Raw would expand a slice; pgx would not).
type Query struct {
	text   string // ? placeholders (GORM's Raw converts them per dialect)
	pgText string // $1, $2, … for pgx
}

// NewQuery prepares sqlText, whose only ? characters are placeholders.
func NewQuery(sqlText string) Query {
	var b strings.Builder
	n := 0
	for _, r := range sqlText {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return Query{text: sqlText, pgText: b.String()}
}

// PostgresText is q as pgx runs it ($n placeholders): for benchmarks that
// run the same statement on a bare pgx pool as the floor to compare with.
func (q Query) PostgresText() string { return q.pgText }

// One runs q on g (a handle or a transaction) with args and scans its first
// row into dest: ErrNoRows when there is none.
func (q Query) One(ctx context.Context, g *gorm.DB, args []any, dest ...any) error {
	return q.run(ctx, g, args, func(r rowScanner) error {
		if !r.Next() {
			return ErrNoRows
		}
		return r.Scan(dest...)
	})
}

// QueryAll runs q on g with args and scans every row into a T through dest,
// which returns pointers to T's fields in the order of q's columns.
func QueryAll[T any](ctx context.Context, g *gorm.DB, q Query, args []any, capacity int, dest func(*T) []any) ([]T, error) {
	out := make([]T, 0, capacity)
	err := q.run(ctx, g, args, func(r rowScanner) error {
		for r.Next() {
			out = append(out, *new(T))
			if err := r.Scan(dest(&out[len(out)-1])...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// rowScanner is what *sql.Rows and pgx.Rows share.
type rowScanner interface {
	Next() bool
	Scan(dest ...any) error
}

// pgxQueries counts the statements that took the pgx path, so that tests
// can tell which path a read took.
var pgxQueries atomic.Int64

// run hands q's rows to fn. The rows' own error (a broken connection
// after the first row) wins over fn's ErrNoRows.
func (q Query) run(ctx context.Context, g *gorm.DB, args []any, fn func(rowScanner) error) error {
	if sqlDB, count := pgxPool(ctx, g); sqlDB != nil {
		if count != nil {
			count.Add(1)
		}
		pgxQueries.Add(1)
		return q.runPgx(ctx, g, sqlDB, args, fn)
	}
	rows, err := g.WithContext(ctx).Raw(q.text, args...).Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	ferr := fn(rows)
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return ferr
}

// pgxPool is g's *sql.DB when q may run on pgx itself: PostgreSQL, not in
// a transaction, ambient or not (whose reads must stay on its connection), and no recording
// span (the OpenTelemetry GORM plugin's span of the statement is what a
// traced request wants to see). count is CountQueries' counter, when g is
// counted.
func pgxPool(ctx context.Context, g *gorm.DB) (_ *sql.DB, count *atomic.Int64) {
	if g.Dialector == nil || g.Dialector.Name() != Postgres || trace.SpanFromContext(ctx).IsRecording() || InAmbientTx(ctx) {
		return nil, nil
	}
	pool := g.Statement.ConnPool
	if c, ok := pool.(*countingPool); ok {
		pool, count = c.pool, c.n
	}
	if a, ok := pool.(*ambientPool); ok {
		pool = a.pool
	}
	sqlDB, _ := pool.(*sql.DB)
	return sqlDB, count
}

func (q Query) runPgx(ctx context.Context, g *gorm.DB, sqlDB *sql.DB, args []any, fn func(rowScanner) error) error {
	begin := time.Now()
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return errors.New("db: the postgres driver is not pgx's")
		}
		rows, err := sc.Conn().Query(ctx, q.pgText, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		ferr := fn(rows)
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		return ferr
	})
	// The slow-query log sees this statement as it sees GORM's.
	g.Logger.Trace(ctx, begin, func() (string, int64) { return q.text, -1 }, err)
	return err
}
