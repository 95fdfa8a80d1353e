package outbox_test

import (
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/counts"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// A delivery lives in deliveries while it is live and in delivery_history
// once final (migration 00090): a final outcome moves it there, with the
// outcome written; a retry leaves it in the queue; a finish without the
// lease moves nothing; a redelivery brings it back; cancelling moves the
// pending ones. The delivery log (delivery_log) and its count see one row
// throughout.
func TestFinishedDeliveriesMoveToTheHistory(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		ctx := f.ctx
		tid := tenant.ID(ctx)
		wh := f.webhook(outbox.ActCreated, "https://hooks.example.com/", true, f.userID)
		ob := &outbox.Outbox{}
		for range 3 {
			f.emit(ob, outbox.ActCreated)
		}
		where := func(step string) (live, history int64) {
			t.Helper()
			if err := d.Table("deliveries").Where("tenant_id = ?", tid).Count(&live).Error; err != nil {
				t.Fatal(err)
			}
			if err := d.Table("delivery_history").Where("tenant_id = ?", tid).Count(&history).Error; err != nil {
				t.Fatal(err)
			}
			var logged int64
			if err := d.Table("delivery_log").Where("tenant_id = ?", tid).Count(&logged).Error; err != nil {
				t.Fatal(err)
			}
			total, err := counts.Total(ctx, d.DB, counts.Deliveries(wh))
			if err != nil {
				t.Fatal(err)
			}
			if logged != 3 || total != 3 {
				t.Fatalf("%s: the log holds %d rows and counts %d; want 3", step, logged, total)
			}
			return live, history
		}
		now := time.Now().UTC().Truncate(time.Millisecond)
		rows := claim(t, d, "w", 3, 3, now.Add(time.Second))
		if len(rows) != 3 {
			t.Fatalf("claimed %d; want 3", len(rows))
		}
		finish := func(c outbox.Claimed, owner string, u outbox.Update) bool {
			t.Helper()
			held, err := outbox.Finish(ctx, d, c, owner, u, now, nil)
			if err != nil {
				t.Fatal(err)
			}
			return held
		}
		if finish(rows[0], "someone else", outbox.Update{Status: outbox.Succeeded}) {
			t.Fatal("a finish without the lease held it")
		}
		if live, hist := where("without the lease"); live != 3 || hist != 0 {
			t.Fatalf("without the lease: %d live, %d history; want 3, 0", live, hist)
		}
		later := now.Add(time.Minute)
		ok := outbox.Update{Status: outbox.Succeeded, Attempt: &outbox.Attempt{Number: 1, At: now, StatusCode: 200, Excerpt: "fine"}}
		if !finish(rows[0], "w", ok) || !finish(rows[1], "w", outbox.Update{Status: outbox.Pending, NextAttemptAt: &later}) {
			t.Fatal("the lease was not held")
		}
		// The third finishes inside a transaction with a follow-up, as a
		// failure that trips the breaker does.
		ran := false
		held, err := outbox.Finish(ctx, d, rows[2], "w", outbox.Update{Status: outbox.Failed}, now, func(*gorm.DB) error { ran = true; return nil })
		if err != nil || !held || !ran {
			t.Fatalf("finish with a follow-up: held %v, ran %v, %v", held, ran, err)
		}
		if live, hist := where("finished"); live != 1 || hist != 2 {
			t.Fatalf("finished: %d live, %d history; want 1 (the retry), 2", live, hist)
		}
		var done struct {
			Status         outbox.Status
			Attempts       int
			LastStatusCode *int
			LeaseOwner     *string
		}
		if err := d.Table("delivery_history").Where("tenant_id = ? AND id = ?", tid, rows[0].ID).Take(&done).Error; err != nil {
			t.Fatal(err)
		}
		if done.Status != outbox.Succeeded || done.Attempts != 1 || done.LastStatusCode == nil || *done.LastStatusCode != 200 || done.LeaseOwner != nil {
			t.Fatalf("the moved row: %+v", done)
		}

		// Redelivered: back in the queue, pending; the history keeps the other.
		if err := d.Tx(ctx, func(tx *gorm.DB) error { return outbox.Requeue(tx, tid, wh, rows[0].ID, now) }); err != nil {
			t.Fatal(err)
		}
		if live, hist := where("redelivered"); live != 2 || hist != 1 {
			t.Fatalf("redelivered: %d live, %d history; want 2, 1", live, hist)
		}
		var st []outbox.Status
		if err := d.Table("deliveries").Where("tenant_id = ? AND id = ?", tid, rows[0].ID).Pluck("status", &st).Error; err != nil || len(st) != 1 || st[0] != outbox.Pending {
			t.Fatalf("redelivered row: %q, %v; want pending", st, err)
		}

		// Cancelled: every pending one goes to the history.
		if err := d.Tx(ctx, func(tx *gorm.DB) error { return outbox.CancelPending(tx, tid, wh, "", now) }); err != nil {
			t.Fatal(err)
		}
		if live, hist := where("cancelled"); live != 0 || hist != 3 {
			t.Fatalf("cancelled: %d live, %d history; want 0, 3", live, hist)
		}
		if ms, err := counts.Check(ctx, d.DB); err != nil || len(ms) != 0 {
			t.Fatalf("counts differ from the rows: %+v, %v", ms, err)
		}
	})
}
