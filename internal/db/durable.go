package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
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
// error, not an outage that decided nothing.
type outcomeTx struct {
	*sql.Tx
	ctx context.Context
}

// Commit commits the transaction.
func (t *outcomeTx) Commit() error {
	before := t.ctx.Err() // database/sql then rolls back without sending COMMIT
	err := t.Tx.Commit()
	if err == nil || before != nil || !commitMayHaveApplied(err) {
		return err
	}
	return &outcomeError{cause: err}
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
