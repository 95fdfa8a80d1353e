package db

import (
	"context"
	"database/sql"

	"gorm.io/gorm"
)

// PreparedSession returns a handle that keeps its statements prepared
// (GORM's PrepareStmt) when Prepared allows it, for hot paths such as the
// bearer check. Inside an ambient transaction (InTx) it runs them
// unprepared on the transaction instead: a statement prepared there would
// die with the transaction and stay in the shared cache, closed, for every
// later use ("sql: statement is closed").
func (d *DB) PreparedSession() *gorm.DB {
	if !d.Prepared() {
		return d.DB.Session(&gorm.Session{})
	}
	s := d.DB.Session(&gorm.Session{PrepareStmt: true})
	prepared, ok := s.Statement.ConnPool.(*gorm.PreparedStmtDB)
	if !ok {
		return s
	}
	pool := &preparedPool{prepared: prepared, plain: d.DB.Config.ConnPool}
	s.Statement.ConnPool = pool
	s.Config.ConnPool = pool
	return s
}

// preparedPool sends a statement to the prepared-statement cache outside an
// ambient transaction, and unprepared to the ambient transaction inside one.
type preparedPool struct {
	prepared *gorm.PreparedStmtDB
	plain    gorm.ConnPool
}

var (
	_ gorm.ConnPool         = (*preparedPool)(nil)
	_ gorm.ConnPoolBeginner = (*preparedPool)(nil)
	_ gorm.GetDBConnector   = (*preparedPool)(nil)
)

func (p *preparedPool) pick(ctx context.Context) gorm.ConnPool {
	if ambientOf(ctx) != nil {
		return p.plain
	}
	return p.prepared
}

func (p *preparedPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return p.pick(ctx).PrepareContext(ctx, query)
}

func (p *preparedPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return p.pick(ctx).ExecContext(ctx, query, args...)
}

func (p *preparedPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return p.pick(ctx).QueryContext(ctx, query, args...)
}

func (p *preparedPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return p.pick(ctx).QueryRowContext(ctx, query, args...)
}

func (p *preparedPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	if ambientOf(ctx) != nil {
		if b, ok := p.plain.(gorm.ConnPoolBeginner); ok {
			return b.BeginTx(ctx, opts)
		}
		return nil, gorm.ErrInvalidTransaction
	}
	return p.prepared.BeginTx(ctx, opts)
}

func (p *preparedPool) GetDBConn() (*sql.DB, error) { return p.prepared.GetDBConn() }
