package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"
)

// The ambient transaction: a transaction carried in the context, which
// every statement run with that context joins, whichever handle runs it.
//
// A layer that must commit its own record with the effects of code it does
// not own (the idempotency layer keeps a request's result in the same
// commit as the request's rows and events) opens a transaction with
// InTx. Inside fn, every statement run with the returned context through
// any handle of this DB (the stores' own handles, tenant.Scope, db.Query)
// runs on that transaction, and a store's own Tx becomes a savepoint of it:
// its rollback undoes its part only, and nothing is committed before InTx
// commits. The stores need not know: the routing is done by the connection
// pool every handle shares (ambientPool), so no store can forget it. On
// SQLite this is also what keeps a nested write from waiting for the very
// write lock the outer transaction holds.
//
// The context fn receives is a TxContext, so that the code that joins says
// so in its types (ARCHITECTURE.md, "The ambient transaction"). Three
// guards keep its traps shut:
//   - preparing a statement on it is refused (ErrPrepareInTx): a statement
//     prepared on a transaction dies with it, and a shared statement cache
//     (GORM's PrepareStmt) would hand it out afterwards, closed. Handles
//     that prepare come from PreparedSession, which runs its statements
//     unprepared inside an ambient transaction;
//   - it ends: every PostgreSQL transaction waits at most lockTimeout for a
//     lock (SET LOCAL lock_timeout), a SQLite one sqliteBusyTimeout (the
//     busy timeout), and the outermost InTx at most ambientDeadline
//     altogether, so that a statement run outside it that waits for its
//     locks ends with an error instead of waiting for ever;
//   - in test binaries a statement run on the plain pool by the goroutine
//     that holds an ambient transaction open (a context that lost the
//     transaction: context.Background, a context from before InTx) is
//     refused with ErrEscapedTx and recorded (TakeEscapes), because it would
//     run outside the transaction, or wait for its locks.
//
// Statements on an ambient transaction are run one at a time (a
// transaction is one connection); code inside fn must not run statements
// concurrently with the context.

type ambientKey struct{}

// TxContext is a context carrying an open ambient transaction: every
// statement run with it joins the transaction. Only InTx makes one; a
// function that must join the caller's transaction says so by taking one.
type TxContext struct{ ambientCtx }

type ambientCtx = context.Context

// ambient is the transaction of an InTx call.
type ambient struct {
	mu    sync.Mutex // serialises savepoint naming; statements share the connection
	pool  gorm.ConnPool
	n     int
	hooks *commitHooks
}

// ambientDeadline is how long the outermost InTx may run: the server's
// write timeout, past which no client waits for the answer. It is what
// ends a wait that no lock timeout does (a statement outside the
// transaction, not itself in one, waiting for the transaction's locks).
var ambientDeadline = 60 * time.Second

// lockTimeout is how long a PostgreSQL transaction waits for a lock before
// failing (lock_not_available, answered like SQLite's busy timeout: 503).
const lockTimeout = sqliteBusyTimeout

// ErrPrepareInTx refuses to prepare a statement on an ambient transaction.
var ErrPrepareInTx = errors.New("db: preparing a statement on an ambient transaction (InTx) is refused: it would be closed with the transaction yet stay in the statement cache; use PreparedSession")

// ErrEscapedTx refuses, in test binaries, a statement run outside the ambient
// transaction its goroutine holds open.
var ErrEscapedTx = errors.New("db: statement run outside the open ambient transaction of its goroutine (its context lost the transaction)")

// InTx runs fn in one transaction that every statement run with fn's
// context joins (see above). It commits when fn returns nil and rolls back
// otherwise or on panic; the functions given to AfterCommit inside it run
// after its commit. A nested InTx (the context already has an ambient
// transaction) runs as a savepoint of it.
func (d *DB) InTx(ctx context.Context, fn func(ctx TxContext, tx *gorm.DB) error) error {
	if outer := ambientOf(ctx); outer != nil {
		h := &commitHooks{}
		hctx := TxContext{context.WithValue(ctx, hooksKey{}, h)}
		err := d.DB.WithContext(hctx).Transaction(func(tx *gorm.DB) error { return fn(hctx, tx) })
		if err == nil {
			hooksOf(ctx).add(h.take()...)
		}
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, ambientDeadline)
	defer cancel()
	h := &commitHooks{}
	var a *ambient
	err := d.DB.WithContext(dctx).Transaction(func(tx *gorm.DB) error {
		a = &ambient{pool: tx.Statement.ConnPool, hooks: h}
		actx := TxContext{context.WithValue(context.WithValue(dctx, ambientKey{}, a), hooksKey{}, h)}
		d.openAmbient(a)
		defer d.closeAmbient(a)
		return fn(actx, tx.WithContext(actx))
	})
	if err != nil {
		if errors.Is(dctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return fmt.Errorf("db: the transaction outlived its %s deadline (a statement outside it waiting for its locks?): %w: %w", ambientDeadline, context.DeadlineExceeded, err)
		}
		return err
	}
	h.run()
	return nil
}

// InAmbientTx reports whether ctx carries an ambient transaction.
func InAmbientTx(ctx context.Context) bool {
	_, ok := ctx.Value(ambientKey{}).(*ambient)
	return ok
}

func ambientOf(ctx context.Context) *ambient {
	if ctx == nil {
		return nil
	}
	a, _ := ctx.Value(ambientKey{}).(*ambient)
	return a
}

// ambientPool is the connection pool of every handle of a DB: outside an
// ambient transaction it is the pool itself; inside one, statements run on
// the transaction and BeginTx opens a savepoint.
type ambientPool struct {
	pool     gorm.ConnPool
	postgres bool
	escapes  escapeCheck
}

var (
	_ gorm.ConnPool         = (*ambientPool)(nil)
	_ gorm.ConnPoolBeginner = (*ambientPool)(nil)
	_ gorm.GetDBConnector   = (*ambientPool)(nil)
	_ gorm.TxCommitter      = (*savepoint)(nil)
	_ gorm.Tx               = (*outcomeTx)(nil)
)

func (p *ambientPool) target(ctx context.Context, query string) (gorm.ConnPool, error) {
	if a := ambientOf(ctx); a != nil {
		return a.pool, nil
	}
	if err := p.escapes.check(query); err != nil {
		return nil, err
	}
	return p.pool, nil
}

func (p *ambientPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if ambientOf(ctx) != nil {
		return nil, ErrPrepareInTx
	}
	t, err := p.target(ctx, query)
	if err != nil {
		return nil, err
	}
	return t.PrepareContext(ctx, query)
}

func (p *ambientPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	t, err := p.target(ctx, query)
	if err != nil {
		return nil, err
	}
	return t.ExecContext(ctx, query, args...)
}

func (p *ambientPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	t, err := p.target(ctx, query)
	if err != nil {
		return nil, err
	}
	return t.QueryContext(ctx, query, args...)
}

// QueryRowContext cannot return an error of its own: an escaped statement
// is recorded (Escapes) and runs.
func (p *ambientPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	t, err := p.target(ctx, query)
	if err != nil {
		t = p.pool
	}
	return t.QueryRowContext(ctx, query, args...)
}

// BeginTx opens a transaction, or a savepoint of the ambient one.
func (p *ambientPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	if a := ambientOf(ctx); a != nil {
		a.mu.Lock()
		a.n++
		name := fmt.Sprintf("finsvc_ambient_%d", a.n)
		a.mu.Unlock()
		if _, err := a.pool.ExecContext(ctx, "SAVEPOINT "+name); err != nil {
			return nil, err
		}
		return &savepoint{pool: a.pool, name: name, ctx: ctx}, nil
	}
	if err := p.escapes.check("BEGIN"); err != nil {
		return nil, err
	}
	var tx gorm.ConnPool
	switch b := p.pool.(type) {
	case *sql.DB:
		// Its COMMIT tells an unknown outcome from a rollback, and reads
		// the connection's notices.
		otx, err := beginOutcomeTx(ctx, b, opts)
		if err != nil {
			return nil, err
		}
		tx = otx
	case gorm.TxBeginner:
		stx, err := b.BeginTx(ctx, opts)
		if err != nil {
			return nil, err
		}
		// Its COMMIT tells an unknown outcome from a rollback.
		tx = &outcomeTx{Tx: stx, ctx: ctx}
	case gorm.ConnPoolBeginner:
		var err error
		if tx, err = b.BeginTx(ctx, opts); err != nil {
			return nil, err
		}
	default:
		return nil, gorm.ErrInvalidTransaction
	}
	if p.postgres {
		if _, err := tx.ExecContext(ctx, lockTimeoutSQL); err != nil {
			if c, ok := tx.(gorm.TxCommitter); ok {
				_ = c.Rollback()
			}
			return nil, fmt.Errorf("db: set the transaction's lock timeout: %w", err)
		}
	}
	return tx, nil
}

var lockTimeoutSQL = fmt.Sprintf("SET LOCAL lock_timeout = %d", lockTimeout.Milliseconds())

// GetDBConn exposes the underlying *sql.DB (gorm's DB() uses it).
func (p *ambientPool) GetDBConn() (*sql.DB, error) {
	switch c := p.pool.(type) {
	case *sql.DB:
		return c, nil
	case gorm.GetDBConnector:
		return c.GetDBConn()
	}
	return nil, errors.New("db: pool has no *sql.DB")
}

// savepoint is a store's transaction inside an ambient one.
type savepoint struct {
	pool gorm.ConnPool
	name string
	ctx  context.Context
}

func (s *savepoint) PrepareContext(context.Context, string) (*sql.Stmt, error) {
	return nil, ErrPrepareInTx
}

func (s *savepoint) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return s.pool.ExecContext(ctx, query, args...)
}

func (s *savepoint) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return s.pool.QueryContext(ctx, query, args...)
}

func (s *savepoint) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return s.pool.QueryRowContext(ctx, query, args...)
}

// Commit releases the savepoint: its work stays part of the ambient
// transaction, committed (or not) with it.
func (s *savepoint) Commit() error {
	_, err := s.pool.ExecContext(s.ctx, "RELEASE SAVEPOINT "+s.name)
	return err
}

// Rollback undoes the savepoint's work and releases it.
func (s *savepoint) Rollback() error {
	if _, err := s.pool.ExecContext(s.ctx, "ROLLBACK TO SAVEPOINT "+s.name); err != nil {
		return err
	}
	_, err := s.pool.ExecContext(s.ctx, "RELEASE SAVEPOINT "+s.name)
	return err
}
