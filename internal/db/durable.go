package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Durability. A transaction that writes commits only once its commit
// record is as durable as the deployment promises: flushed, and with
// synchronous_standby_names set, confirmed by the synchronous standby.
// A transaction that writes nothing waits for nothing at COMMIT. So an
// answer decided by reading stored state ("this already happened": an
// idempotent replay, a result accepted again) could confirm a write that
// is on this server's disk but not yet on the standby (the server crashed
// between its local commit and the standby's confirmation, and restarted):
// a failover would then lose what the answer confirmed. Such an answer
// is sent only after WaitDurable.

// DurableSQL is the barrier: one autocommit statement (safe behind a
// transaction pooler) whose transaction takes a transaction id and writes a
// WAL record (a transactional logical message, which anyone may emit and
// nothing decodes), so that its commit waits, with the default
// synchronous_commit, until the WAL is flushed and confirmed by the
// synchronous standby past its commit record, and so past every earlier
// commit. Taking a transaction id alone is not enough: PostgreSQL waits
// neither for the flush nor for the standby when a transaction wrote no
// WAL besides its commit record (RecordTransactionCommit's wrote_xlog);
// the synchronous-standby test caught exactly that.
const DurableSQL = "SELECT pg_logical_emit_message(true, 'finsvc.durable', '')::text"

var durableQuery = NewQuery(DurableSQL)

// durableWait bounds the barrier: a synchronous standby that does not
// confirm within it (paused, gone, a failover under way) makes the answer
// an unknown outcome, which the client retries, rather than a request that
// holds its connection for as long as the standby is away.
var durableWait = 5 * time.Second

// ErrOutcomeUnknown marks an error after which a write may or may not have
// been applied, or may be applied but not yet durable: the connection was
// lost while its COMMIT was under way, or WaitDurable did not complete.
// Nothing decided it; the client retries with the same Idempotency-Key,
// and the retry tells (IsOutcomeUnknown).
var ErrOutcomeUnknown = errors.New("db: the outcome is unknown")

// outcomeError is an error whose outcome is unknown, keeping its cause.
type outcomeError struct{ cause error }

func (e *outcomeError) Error() string {
	return fmt.Sprintf("%v: %v", ErrOutcomeUnknown, e.cause)
}

func (e *outcomeError) Unwrap() []error { return []error{ErrOutcomeUnknown, e.cause} }

// IsOutcomeUnknown reports whether err leaves a write's outcome unknown
// (ErrOutcomeUnknown). It is checked before IsUnavailable: such an error
// is usually also a lost connection, but something may have been decided.
func IsOutcomeUnknown(err error) bool { return errors.Is(err, ErrOutcomeUnknown) }

// WaitDurable returns once everything committed before it is durable where
// the deployment promises (see above), or an ErrOutcomeUnknown error. On
// PostgreSQL it runs DurableSQL, bounded by durableWait; inside an ambient
// transaction (InTx) the statement joins it, and the transaction's own
// commit is then the barrier. On SQLite, whose commits are durable when
// they return, it does nothing.
//
// PostgreSQL answers a wait for the standby that was cancelled (this
// context ending, pgx's cancel request) with a WARNING and success: the
// barrier's commit is then local only, so an ended context counts as not
// durable whatever the statement returned.
func (d *DB) WaitDurable(ctx context.Context) error {
	if f := d.durableFault(); f != nil {
		if err := f(ctx); err != nil {
			return &outcomeError{cause: err}
		}
	}
	if d.Dialect != Postgres {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, durableWait)
	defer cancel()
	var lsn string
	err := durableQuery.One(wctx, d.DB, nil, &lsn)
	if err == nil {
		err = wctx.Err()
	}
	if err != nil {
		return &outcomeError{cause: fmt.Errorf("wait until durable: %w", err)}
	}
	return nil
}

// faults are test hooks shared by every handle of a DB.
type faults struct {
	durable atomic.Pointer[func(context.Context) error]
}

func (d *DB) durableFault() func(context.Context) error {
	if d == nil || d.faults == nil {
		return nil
	}
	if f := d.faults.durable.Load(); f != nil {
		return *f
	}
	return nil
}

// SetDurableFault makes every WaitDurable of d (and of every handle made
// from it) call fn first; an error from fn fails the barrier. For fault
// tests (count barriers, make one fail); nil removes it.
func (d *DB) SetDurableFault(fn func(context.Context) error) {
	if fn == nil {
		d.faults.durable.Store(nil)
		return
	}
	d.faults.durable.Store(&fn)
}

// outcomeTx is a transaction whose COMMIT classifies its failure: an error
// after which the commit may have been applied is an ErrOutcomeUnknown
// error, not an outage that decided nothing. So is a COMMIT that succeeded
// without the durability promised (see countSyncRepCancel).
type outcomeTx struct {
	*sql.Tx
	ctx context.Context
	// conn is the connection the transaction was begun on, held for it
	// and released when it ends; pg is its pgx connection (nil when it is
	// not one), whose notices Commit reads.
	conn *sql.Conn
	pg   *pgconn.PgConn
}

// beginOutcomeTx begins a transaction on a connection of its own from
// pool, so that its COMMIT can read the connection's notices.
// A connection found closed when BEGIN is sent (driver.ErrBadConn: the
// server went away while it was idle) is dropped and another is taken, as
// sql.DB.BeginTx does.
func beginOutcomeTx(ctx context.Context, pool *sql.DB, opts *sql.TxOptions) (*outcomeTx, error) {
	for try := 0; ; try++ {
		tx, err := beginOutcomeTxOnce(ctx, pool, opts)
		if err == nil || !errors.Is(err, driver.ErrBadConn) || try == 2 {
			return tx, err
		}
	}
}

func beginOutcomeTxOnce(ctx context.Context, pool *sql.DB, opts *sql.TxOptions) (*outcomeTx, error) {
	conn, err := pool.Conn(ctx)
	if err != nil {
		return nil, err
	}
	var pg *pgconn.PgConn
	_ = conn.Raw(func(dc any) error {
		if c, ok := dc.(interface{ Conn() *pgx.Conn }); ok {
			pg = c.Conn().PgConn()
		}
		return nil
	})
	stx, err := conn.BeginTx(ctx, opts)
	if err != nil {
		if errors.Is(err, driver.ErrBadConn) {
			// Returned to the pool, the connection is discarded.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		_ = conn.Close()
		return nil, err
	}
	return &outcomeTx{Tx: stx, ctx: ctx, conn: conn, pg: pg}, nil
}

// Commit commits the transaction. A COMMIT that returned success is an
// unknown outcome all the same when PostgreSQL warned that it stopped
// waiting for the synchronous standby (the commit is local only), or when
// the transaction's context ended while the COMMIT ran (the wait may have
// been cancelled that way; nothing tells it from a completed one).
func (t *outcomeTx) Commit() error {
	before := t.ctx.Err() // database/sql then rolls back without sending COMMIT
	warned := syncRepCancels(t.pg)
	err := t.Tx.Commit()
	if err == nil && syncRepCancels(t.pg) != warned {
		err = &outcomeError{cause: errSyncRepCancelled}
	} else if err == nil && before == nil && t.ctx.Err() != nil {
		err = &outcomeError{cause: fmt.Errorf("the request ended while its COMMIT ran: %w", t.ctx.Err())}
	} else if err != nil && before == nil && commitMayHaveApplied(err) {
		err = &outcomeError{cause: err}
	}
	t.release()
	return err
}

// Rollback rolls the transaction back.
func (t *outcomeTx) Rollback() error {
	err := t.Tx.Rollback()
	t.release()
	return err
}

func (t *outcomeTx) release() {
	if t.conn != nil {
		_ = t.conn.Close()
	}
}

// errSyncRepCancelled is the cause of an unknown outcome whose COMMIT
// PostgreSQL acknowledged after it stopped waiting for the standby.
var errSyncRepCancelled = errors.New("the commit's wait for the synchronous standby was cancelled: committed on the primary only")

// syncRepCancelKey counts, in a pgx connection's CustomData, the
// synchronous-replication cancellations it was warned of.
const syncRepCancelKey = "finsvc.syncrep_cancelled"

// countSyncRepCancel is every PostgreSQL connection's notice handler. A
// COMMIT whose wait for the synchronous standby is cancelled (a cancel
// request: statement_timeout, pg_cancel_backend, a driver that cancels
// when its context ends) returns success, with a WARNING "canceling wait
// for synchronous replication …" ("The transaction has already committed
// locally, but might not have been replicated to the standby"); the
// handler counts such warnings on the connection, and outcomeTx.Commit
// compares the count around its COMMIT. Notices are handled by the
// goroutine that reads the connection's replies, which is the one running
// the COMMIT: no lock is needed. The message is matched in English, the
// server's lc_messages default.
func countSyncRepCancel(c *pgconn.PgConn, n *pgconn.Notice) {
	if n == nil || c == nil || n.SeverityUnlocalized != "WARNING" ||
		!strings.Contains(n.Message, "wait for synchronous replication") {
		return
	}
	d := c.CustomData()
	v, _ := d[syncRepCancelKey].(int)
	d[syncRepCancelKey] = v + 1
}

func syncRepCancels(c *pgconn.PgConn) int {
	if c == nil {
		return 0
	}
	v, _ := c.CustomData()[syncRepCancelKey].(int)
	return v
}

// commitMayHaveApplied reports whether a COMMIT that failed with err may
// still have committed: the connection broke or the server ended while the
// COMMIT was under way. A statement error from the server (a deferred
// constraint, a serialization failure) rolled back; database/sql's own
// refusal (the transaction already done) sent nothing; SQLite commits in
// this process, and its failure is a rollback. Everything else may have
// committed, even pgconn's "conn closed", which claims that nothing was
// sent: the synchronous-standby test saw it for a COMMIT that the primary
// had applied before its postmaster was killed.
func commitMayHaveApplied(err error) bool {
	if errors.Is(err, sql.ErrTxDone) {
		return false
	}
	if _, ok := sqliteCode(err); ok {
		return false
	}
	if code, ok := pgCode(err); ok {
		// 08: connection exception; 57P: the server shutting down or
		// crashing (pg_terminate_backend, a crash of another backend);
		// XX: internal error. Other classes are the commit's own refusal.
		return strings.HasPrefix(code, "08") || strings.HasPrefix(code, "57P") || strings.HasPrefix(code, "XX")
	}
	return true
}
