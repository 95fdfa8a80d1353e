package db_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
)

func ambientProbe(t *testing.T, d *db.DB) {
	t.Helper()
	if err := d.Exec("CREATE TABLE ambient_probe (id integer PRIMARY KEY, v integer NOT NULL)").Error; err != nil {
		t.Fatal(err)
	}
	if err := d.Exec("INSERT INTO ambient_probe (id, v) VALUES (1, 0)").Error; err != nil {
		t.Fatal(err)
	}
}

// The prepared-statement trap: a statement prepared on an ambient
// transaction dies with it, and a shared statement cache would hand it out
// afterwards ("sql: statement is closed" on every later use). Preparing
// there is refused, without poisoning the cache, and PreparedSession runs
// its statements unprepared on the transaction instead.
func TestAmbientTransactionPreparedStatements(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ambientProbe(t, d)
		const read = "SELECT v FROM ambient_probe WHERE id = 1"
		readWith := func(ctx context.Context, g *gorm.DB) (int, error) {
			var v int
			err := g.WithContext(ctx).Raw(read).Scan(&v).Error
			return v, err
		}
		raw := d.DB.Session(&gorm.Session{PrepareStmt: true})
		hot := d.PreparedSession()
		err := d.InTx(t.Context(), func(ctx db.TxContext, tx *gorm.DB) error {
			if err := tx.Exec("UPDATE ambient_probe SET v = 7 WHERE id = 1").Error; err != nil {
				return err
			}
			if _, err := readWith(ctx, raw); !errors.Is(err, db.ErrPrepareInTx) {
				t.Errorf("a PrepareStmt session inside InTx: %v; want ErrPrepareInTx", err)
			}
			// Inside a store's savepoint too.
			err := d.Tx(ctx, func(tx *gorm.DB) error {
				_, err := readWith(ctx, raw)
				return err
			})
			if !errors.Is(err, db.ErrPrepareInTx) {
				t.Errorf("a PrepareStmt session in a savepoint: %v; want ErrPrepareInTx", err)
			}
			v, err := readWith(ctx, hot)
			if err != nil || v != 7 {
				t.Errorf("PreparedSession inside InTx = %d, %v; want the transaction's 7", v, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// After the commit both handles still work, several times over.
		for range 3 {
			for name, g := range map[string]*gorm.DB{"PrepareStmt": raw, "PreparedSession": hot} {
				if v, err := readWith(t.Context(), g); err != nil || v != 7 {
					t.Fatalf("%s after the commit = %d, %v; want 7", name, v, err)
				}
			}
		}
	})
}

// The self-wait trap: a statement that leaves the ambient transaction
// (another goroutine, another context) and needs a lock the transaction
// holds ends with an error that says the database could not serve it
// (503), after the lock timeout: on PostgreSQL every transaction's
// lock_timeout, on SQLite the busy timeout.
func TestAmbientTransactionSelfWaitEnds(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ambientProbe(t, d)
		var waitErr error
		err := d.InTx(t.Context(), func(ctx db.TxContext, tx *gorm.DB) error {
			if err := tx.Exec("UPDATE ambient_probe SET v = 1 WHERE id = 1").Error; err != nil {
				return err
			}
			done := make(chan error)
			go func() {
				done <- d.Tx(context.Background(), func(tx *gorm.DB) error {
					return tx.Exec("UPDATE ambient_probe SET v = 2 WHERE id = 1").Error
				})
			}()
			waitErr = <-done
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !db.IsUnavailable(waitErr) {
			t.Fatalf("the escaped write = %v; want a lock timeout", waitErr)
		}
		var v int
		if err := d.Raw("SELECT v FROM ambient_probe WHERE id = 1").Scan(&v).Error; err != nil || v != 1 {
			t.Fatalf("v = %d, %v; want the transaction's 1", v, err)
		}
	})
}

// A statement outside any transaction takes no lock_timeout: the ambient
// transaction's deadline ends its wait (PostgreSQL; on SQLite the busy
// timeout covers it), and InTx says what happened.
func TestAmbientTransactionDeadline(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		if d.Dialect != db.Postgres {
			t.Skip("SQLite: the busy timeout ends every wait for the write lock (TestAmbientTransactionSelfWaitEnds)")
		}
		ambientProbe(t, d)
		db.SetAmbientDeadline(t, time.Second)
		err := d.InTx(t.Context(), func(ctx db.TxContext, tx *gorm.DB) error {
			if err := tx.Exec("UPDATE ambient_probe SET v = 1 WHERE id = 1").Error; err != nil {
				return err
			}
			done := make(chan error)
			go func() {
				done <- d.Exec("UPDATE ambient_probe SET v = 2 WHERE id = 1").Error
			}()
			return <-done
		})
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "outlived") {
			t.Fatalf("InTx = %v; want its deadline", err)
		}
	})
}

// In test binaries a statement run by the goroutine that holds an ambient
// transaction open, with a context that lost it, is refused and recorded:
// it would run outside the transaction, or wait for its locks.
func TestAmbientTransactionEscapeRefused(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ambientProbe(t, d)
		err := d.InTx(t.Context(), func(ctx db.TxContext, tx *gorm.DB) error {
			if err := d.WithContext(ctx).Exec("UPDATE ambient_probe SET v = 1 WHERE id = 1").Error; err != nil {
				return err
			}
			lost := context.Background()
			var v int
			if err := d.WithContext(lost).Raw("SELECT v FROM ambient_probe WHERE id = 1").Scan(&v).Error; !errors.Is(err, db.ErrEscapedTx) {
				t.Errorf("a read with a lost context = %v; want ErrEscapedTx", err)
			}
			err := d.Tx(lost, func(tx *gorm.DB) error { return tx.Exec("UPDATE ambient_probe SET v = 2").Error })
			if !errors.Is(err, db.ErrEscapedTx) {
				t.Errorf("a Tx with a lost context = %v; want ErrEscapedTx", err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := d.TakeEscapes(); len(got) != 2 {
			t.Fatalf("escapes = %q; want the read and the BEGIN", got)
		}
		// Once InTx has returned, the goroutine's statements are its own.
		if err := d.WithContext(context.Background()).Exec("UPDATE ambient_probe SET v = 3").Error; err != nil {
			t.Fatal(err)
		}
	})
}

// AfterCommit's functions run once the outermost transaction has
// committed, never on a rollback, and at once outside a transaction.
func TestAfterCommit(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		var ran []string
		hook := func(name string) func() { return func() { ran = append(ran, name) } }
		boom := errors.New("boom")
		want := func(step string, names ...string) {
			t.Helper()
			if strings.Join(ran, ",") != strings.Join(names, ",") {
				t.Fatalf("%s: ran %q; want %q", step, ran, names)
			}
		}

		db.AfterCommit(d.DB, hook("outside"))
		want("outside a transaction", "outside")
		ran = nil

		_ = d.Tx(t.Context(), func(tx *gorm.DB) error { db.AfterCommit(tx, hook("tx")); return nil })
		_ = d.Tx(t.Context(), func(tx *gorm.DB) error { db.AfterCommit(tx, hook("rolled back")); return boom })
		want("Tx", "tx")
		ran = nil

		err := d.InTx(t.Context(), func(ctx db.TxContext, tx *gorm.DB) error {
			db.AfterCommit(tx, hook("ambient"))
			_ = d.Tx(ctx, func(tx *gorm.DB) error { db.AfterCommit(tx, hook("savepoint")); return nil })
			_ = d.Tx(ctx, func(tx *gorm.DB) error { db.AfterCommit(tx, hook("savepoint rolled back")); return boom })
			_ = d.InTx(ctx, func(ctx db.TxContext, tx *gorm.DB) error { db.AfterCommit(tx, hook("nested")); return nil })
			want("before the commit")
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want("after the commit", "ambient", "savepoint", "nested")
		ran = nil

		_ = d.InTx(t.Context(), func(ctx db.TxContext, tx *gorm.DB) error {
			_ = d.Tx(ctx, func(tx *gorm.DB) error { db.AfterCommit(tx, hook("savepoint")); return nil })
			return boom
		})
		want("after a rollback")
	})
}
