package db_test

import (
	"context"
	"errors"
	"testing"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
)

// Statements run with the context of InTx join its transaction through any
// handle: a store's own Tx becomes a savepoint (its rollback undoes only its
// part), reads see the transaction's uncommitted rows, and nothing is
// visible elsewhere before the commit; a failed InTx leaves nothing.
func TestAmbientTransaction(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx := t.Context()
		if err := d.Exec("CREATE TABLE ambient_probe (v integer NOT NULL)").Error; err != nil {
			t.Fatal(err)
		}
		count := func(ctx context.Context) int64 {
			t.Helper()
			var n int64
			if err := d.WithContext(ctx).Table("ambient_probe").Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		insert := func(ctx context.Context, v int) error {
			return d.Tx(ctx, func(tx *gorm.DB) error {
				return tx.Exec("INSERT INTO ambient_probe (v) VALUES (?)", v).Error
			})
		}
		boom := errors.New("boom")
		err := d.InTx(ctx, func(ctx db.TxContext, _ *gorm.DB) error {
			if !db.InAmbientTx(ctx) {
				t.Fatal("InTx's context carries no ambient transaction")
			}
			if err := insert(ctx, 1); err != nil { // a store's Tx: a savepoint
				return err
			}
			// A store's Tx that fails undoes its own part only.
			err := d.Tx(ctx, func(tx *gorm.DB) error {
				if err := tx.Exec("INSERT INTO ambient_probe (v) VALUES (2)").Error; err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("inner Tx = %v; want boom", err)
			}
			// A plain handle's read with the context sees the uncommitted
			// row; without it (another connection) it does not.
			if n := count(ctx); n != 1 {
				t.Fatalf("inside: %d rows; want 1", n)
			}
			if d.Dialect == db.Postgres {
				// From another goroutine: this one's would be refused
				// (TestAmbientTransactionEscapeRefused).
				outside := make(chan int64)
				go func() {
					var n int64
					_ = d.WithContext(context.Background()).Table("ambient_probe").Count(&n).Error
					outside <- n
				}()
				if n := <-outside; n != 0 {
					t.Fatalf("outside before commit: %d rows; want 0", n)
				}
			}
			// A nested InTx is a savepoint too.
			return d.InTx(ctx, func(ctx db.TxContext, _ *gorm.DB) error { return insert(ctx, 3) })
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := count(ctx); n != 2 {
			t.Fatalf("after commit: %d rows; want 2", n)
		}
		// A failing InTx keeps nothing, whatever its savepoints released.
		err = d.InTx(ctx, func(ctx db.TxContext, _ *gorm.DB) error {
			if err := insert(ctx, 4); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("InTx = %v; want boom", err)
		}
		if n := count(ctx); n != 2 {
			t.Fatalf("after rollback: %d rows; want 2", n)
		}
	})
}
