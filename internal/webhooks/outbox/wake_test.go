package outbox_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

type countingNotifier struct{ n atomic.Int64 }

func (c *countingNotifier) Notify() { c.n.Add(1) }

// The in-process wake-up fires once the events' transaction has committed
// (the ambient one's commit, when the store's transaction is a savepoint of
// it), never before and never on a rollback: a worker woken earlier would
// find nothing to claim.
func TestEmitWakesWorkersAfterTheCommit(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.webhook(outbox.ActCreated, "https://hooks.example.com/a", true, f.userID)
		wake := &countingNotifier{}
		ob := &outbox.Outbox{Notifier: wake}
		emit := func(tx *gorm.DB) error {
			_, err := ob.Emit(f.ctx, tx, outbox.Event{ID: uuid.New(), Kind: outbox.ActCreated, Data: map[string]any{}})
			return err
		}

		if err := d.Tx(f.ctx, emit); err != nil {
			t.Fatal(err)
		}
		if n := wake.n.Load(); n != 1 {
			t.Fatalf("after a store's commit: %d wake-ups; want 1", n)
		}

		err := d.InTx(f.ctx, func(ctx db.TxContext, _ *gorm.DB) error {
			if err := d.Tx(ctx, emit); err != nil { // a savepoint: no commit yet
				return err
			}
			if n := wake.n.Load(); n != 1 {
				t.Errorf("inside the ambient transaction: %d wake-ups; want still 1", n)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := wake.n.Load(); n != 2 {
			t.Fatalf("after the ambient commit: %d wake-ups; want 2", n)
		}

		boom := errors.New("boom")
		_ = d.InTx(f.ctx, func(ctx db.TxContext, _ *gorm.DB) error {
			if err := d.Tx(ctx, emit); err != nil {
				return err
			}
			return boom
		})
		_ = d.Tx(f.ctx, func(tx *gorm.DB) error {
			if err := emit(tx); err != nil {
				return err
			}
			return boom
		})
		if n := wake.n.Load(); n != 2 {
			t.Fatalf("after two rollbacks: %d wake-ups; want still 2", n)
		}
	})
}
