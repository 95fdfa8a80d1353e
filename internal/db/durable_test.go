package db_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
)

// On PostgreSQL the barrier is one statement whose transaction takes a
// transaction id and writes WAL, so that its commit waits for the flush and
// the synchronous standby; on SQLite it sends nothing. A fault makes it an unknown
// outcome on both.
func TestWaitDurable(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx := t.Context()
		counted, count := d.CountQueries()
		if err := counted.WaitDurable(ctx); err != nil {
			t.Fatalf("WaitDurable: %v", err)
		}
		switch d.Dialect {
		case db.Postgres:
			if n := count(); n != 1 {
				t.Fatalf("the barrier sent %d statements; want 1", n)
			}
			// PostgreSQL waits at COMMIT (flush, standby) only for a
			// transaction that has an xid and wrote WAL: the statement
			// must do both.
			err := d.Tx(ctx, func(tx *gorm.DB) error {
				var lsn string
				var xid *string
				if err := tx.Raw(db.DurableSQL).Scan(&lsn).Error; err != nil {
					return err
				}
				if err := tx.Raw("SELECT pg_current_xact_id_if_assigned()::text").Scan(&xid).Error; err != nil {
					return err
				}
				if lsn == "" || xid == nil {
					t.Errorf("the barrier wrote WAL at %q with xid %v; want both", lsn, xid)
				}
				return errors.New("rollback")
			})
			if err == nil || err.Error() != "rollback" {
				t.Fatal(err)
			}
		case db.SQLite:
			if n := count(); n != 0 {
				t.Fatalf("the barrier sent %d statements on SQLite; want none", n)
			}
		}

		var calls atomic.Int64
		d.SetDurableFault(func(context.Context) error {
			calls.Add(1)
			return errors.New("the standby did not confirm")
		})
		err := counted.WaitDurable(ctx) // a handle made from d shares its faults
		if !db.IsOutcomeUnknown(err) || calls.Load() != 1 {
			t.Fatalf("WaitDurable with a fault: %v (%d calls); want an unknown outcome", err, calls.Load())
		}
		d.SetDurableFault(nil)
		if err := d.WaitDurable(ctx); err != nil {
			t.Fatalf("WaitDurable after the fault: %v", err)
		}
	})
}

// A barrier whose context ends is not durable, whatever the statement
// answered: PostgreSQL answers a cancelled wait for the standby with
// success.
func TestWaitDurableEndedContext(t *testing.T) {
	d := testdb.Postgres(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := d.WaitDurable(ctx); !db.IsOutcomeUnknown(err) {
		t.Fatalf("WaitDurable on an ended context: %v; want an unknown outcome", err)
	}
	// Bounded: a barrier that outlives durableWait is abandoned.
	defer db.SetDurableWait(time.Nanosecond)()
	if err := d.WaitDurable(t.Context()); !db.IsOutcomeUnknown(err) {
		t.Fatalf("WaitDurable past its bound: %v; want an unknown outcome", err)
	}
}

// A failed COMMIT is an unknown outcome only when it may have applied.
func TestCommitMayHaveApplied(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{io.EOF, true},
		{io.ErrUnexpectedEOF, true},
		{&net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, true},
		{driver.ErrBadConn, true},
		{fmt.Errorf("x: %w", &pgconn.PgError{Severity: "FATAL", Code: "57P01"}), true},
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "40001"}, false}, // serialization failure: rolled back
		{&pgconn.PgError{Code: "23505"}, false}, // a deferred unique constraint
		{sql.ErrTxDone, false},
		{fmt.Errorf("x: %w", pgconn.ErrConnClosed), true},
	} {
		if got := db.CommitMayHaveApplied(c.err); got != c.want {
			t.Errorf("CommitMayHaveApplied(%v) = %v; want %v", c.err, got, c.want)
		}
	}
}

// A COMMIT the database refused (a deferred constraint) is a rollback on
// both dialects, not an unknown outcome; a connection that dies while the
// COMMIT runs (PostgreSQL: the backend terminated during it) is one.
func TestCommitOutcome(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx := t.Context()
		ddl := []string{
			`CREATE TABLE probe_parent (id INTEGER PRIMARY KEY)`,
			`CREATE TABLE probe_child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES probe_parent (id) DEFERRABLE INITIALLY DEFERRED)`,
		}
		for _, q := range ddl {
			if err := d.Exec(q).Error; err != nil {
				t.Fatal(err)
			}
		}
		err := d.Tx(ctx, func(tx *gorm.DB) error {
			return tx.Exec("INSERT INTO probe_child (id, parent) VALUES (1, 42)").Error
		})
		if err == nil || !db.IsForeignKeyViolation(err) || db.IsOutcomeUnknown(err) {
			t.Fatalf("deferred constraint at COMMIT: %v; want a foreign-key violation, not an unknown outcome", err)
		}
		if d.Dialect != db.Postgres {
			return
		}

		// COMMIT runs a deferred trigger that sleeps; the backend is
		// terminated meanwhile.
		for _, q := range []string{
			`CREATE FUNCTION probe_sleep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(30); RETURN NULL; END $$`,
			`CREATE CONSTRAINT TRIGGER probe_slow AFTER INSERT ON probe_parent DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION probe_sleep()`,
		} {
			if err := d.Exec(q).Error; err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan error, 1)
		go func() {
			done <- d.Tx(ctx, func(tx *gorm.DB) error {
				return tx.Exec("INSERT INTO probe_parent (id) VALUES (1)").Error
			})
		}()
		testdb.TerminateCommit(t, d)
		select {
		case err = <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("the COMMIT did not end after its backend was terminated")
		}
		if !db.IsOutcomeUnknown(err) {
			t.Fatalf("connection lost during COMMIT: %v; want an unknown outcome", err)
		}
	})
}
