package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

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
// Statements on an ambient transaction are run one at a time (a
// transaction is one connection); code inside fn must not run statements
// concurrently with the context.

type ambientKey struct{}

// ambient is the transaction of an InTx call.
type ambient struct {
	mu   sync.Mutex // serialises savepoint naming; statements share the connection
	pool gorm.ConnPool
	n    int
}

// InTx runs fn in one transaction that every statement run with fn's
// context joins (see above). It commits when fn returns nil and rolls back
// otherwise or on panic. A nested InTx (the context already has an ambient
// transaction) runs as a savepoint of it.
func (d *DB) InTx(ctx context.Context, fn func(ctx context.Context, tx *gorm.DB) error) error {
	return d.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if _, ok := ctx.Value(ambientKey{}).(*ambient); ok {
			return fn(ctx, tx)
		}
		actx := context.WithValue(ctx, ambientKey{}, &ambient{pool: tx.Statement.ConnPool})
		return fn(actx, tx.WithContext(actx))
	})
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
type ambientPool struct{ pool gorm.ConnPool }

var (
	_ gorm.ConnPool         = (*ambientPool)(nil)
	_ gorm.ConnPoolBeginner = (*ambientPool)(nil)
	_ gorm.GetDBConnector   = (*ambientPool)(nil)
	_ gorm.TxCommitter      = (*savepoint)(nil)
	_ gorm.Tx               = (*outcomeTx)(nil)
)

func (p *ambientPool) target(ctx context.Context) gorm.ConnPool {
	if a := ambientOf(ctx); a != nil {
		return a.pool
	}
	return p.pool
}

func (p *ambientPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return p.target(ctx).PrepareContext(ctx, query)
}

func (p *ambientPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return p.target(ctx).ExecContext(ctx, query, args...)
}

func (p *ambientPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return p.target(ctx).QueryContext(ctx, query, args...)
}

func (p *ambientPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return p.target(ctx).QueryRowContext(ctx, query, args...)
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
	switch b := p.pool.(type) {
	case gorm.TxBeginner:
		tx, err := b.BeginTx(ctx, opts)
		if err != nil {
			return nil, err
		}
		// Its COMMIT tells an unknown outcome from a rollback.
		return &outcomeTx{Tx: tx, ctx: ctx}, nil
	case gorm.ConnPoolBeginner:
		return b.BeginTx(ctx, opts)
	}
	return nil, gorm.ErrInvalidTransaction
}

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

func (s *savepoint) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return s.pool.PrepareContext(ctx, query)
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
