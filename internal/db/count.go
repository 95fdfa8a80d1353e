package db

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"

	"gorm.io/gorm"
)

// CountQueries returns a handle on the same connections as d that counts the
// statements it sends to the database, and a function reading the count.
// Tests use it to pin query shapes ("one query per page plus one count").
//
// Counting happens at the connection-pool level, so it sees everything the
// handle and any handle derived from it runs: chained calls, WithContext,
// tenant.Scope, preloads, and statements inside Transaction. BEGIN, COMMIT
// and ROLLBACK are not counted.
func CountQueries(d *gorm.DB) (counted *gorm.DB, count func() int) {
	n := new(atomic.Int64)
	// A Session with a Context clones the statement, so setting its pool
	// leaves d untouched; later chains copy the pool along.
	s := d.Session(&gorm.Session{Context: d.Statement.Context})
	if s.Statement.Context == nil {
		s = d.Session(&gorm.Session{Context: context.Background()})
	}
	s.Statement.ConnPool = &countingPool{pool: s.Statement.ConnPool, n: n}
	return s, func() int { return int(n.Load()) }
}

// CountQueries is CountQueries on d's handle, keeping the dialect.
func (d *DB) CountQueries() (*DB, func() int) {
	g, count := CountQueries(d.DB)
	return &DB{DB: g, Dialect: d.Dialect, log: d.log, prepared: d.prepared, faults: d.faults}, count
}

type countingPool struct {
	pool gorm.ConnPool
	n    *atomic.Int64
}

var (
	_ gorm.ConnPool         = (*countingPool)(nil)
	_ gorm.ConnPoolBeginner = (*countingPool)(nil)
	_ gorm.TxCommitter      = (*countingTx)(nil)
)

func (p *countingPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return p.pool.PrepareContext(ctx, query)
}

func (p *countingPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	p.count(ctx)
	return p.pool.ExecContext(ctx, query, args...)
}

func (p *countingPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	p.count(ctx)
	return p.pool.QueryContext(ctx, query, args...)
}

func (p *countingPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	p.count(ctx)
	return p.pool.QueryRowContext(ctx, query, args...)
}

// count counts a statement, unless it runs on an ambient transaction
// (InTx) or a savepoint of one: the transaction's own pool counts those,
// once.
func (p *countingPool) count(ctx context.Context) {
	switch p.pool.(type) {
	case *savepoint:
		return
	case *ambientPool:
		if ambientOf(ctx) != nil {
			return
		}
	}
	p.n.Add(1)
}

// BeginTx lets gorm open transactions through the wrapper, so statements in
// the transaction are counted too.
func (p *countingPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	var (
		tx  gorm.ConnPool
		err error
	)
	switch b := p.pool.(type) {
	case gorm.TxBeginner:
		var stx *sql.Tx
		stx, err = b.BeginTx(ctx, opts)
		if stx != nil {
			tx = stx
		}
	case gorm.ConnPoolBeginner:
		tx, err = b.BeginTx(ctx, opts)
	default:
		return nil, gorm.ErrInvalidTransaction
	}
	if err != nil {
		return nil, err
	}
	return &countingTx{countingPool{pool: tx, n: p.n}}, nil
}

// GetDBConn exposes the underlying *sql.DB (gorm's DB() uses it).
func (p *countingPool) GetDBConn() (*sql.DB, error) {
	switch c := p.pool.(type) {
	case *sql.DB:
		return c, nil
	case gorm.GetDBConnector:
		return c.GetDBConn()
	}
	return nil, errors.New("db: counted pool has no *sql.DB")
}

type countingTx struct{ countingPool }

func (t *countingTx) Commit() error {
	c, ok := t.pool.(gorm.TxCommitter)
	if !ok {
		return gorm.ErrInvalidTransaction
	}
	return c.Commit()
}

func (t *countingTx) Rollback() error {
	c, ok := t.pool.(gorm.TxCommitter)
	if !ok {
		return gorm.ErrInvalidTransaction
	}
	return c.Rollback()
}
