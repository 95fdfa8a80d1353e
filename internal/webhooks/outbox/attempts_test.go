package outbox_test

import (
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// Every attempt is kept: a delivery that fails for good, is redelivered,
// is retried, is redelivered again and then succeeds lists its three
// attempts in order, each with its own answer, whatever the row's own
// count and last outcome say; a finish without the lease appends nothing,
// and deleting the registration's deliveries takes the attempts too.
func TestRedeliveriesKeepEveryAttempt(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		ctx := f.ctx
		tid := tenant.ID(ctx)
		wh := f.webhook(outbox.ActCreated, "https://hooks.example.com/", true, f.userID)
		f.emit(&outbox.Outbox{}, outbox.ActCreated)
		t0 := time.Now().UTC().Truncate(time.Millisecond)
		step := 0
		attempt := func(u outbox.Update, code int, excerpt string) outbox.Claimed {
			t.Helper()
			step++
			at := t0.Add(time.Duration(step) * time.Minute)
			rows := claim(t, d, "w", 1, 1, at)
			if len(rows) != 1 {
				t.Fatalf("attempt %d: claimed %d; want 1", step, len(rows))
			}
			if held, err := outbox.Finish(ctx, d, rows[0], "someone else", u, at, nil); err != nil || held {
				t.Fatalf("attempt %d without the lease: held %v, %v", step, held, err)
			}
			u.Attempt = &outbox.Attempt{Number: rows[0].Attempts + 1, At: at, StatusCode: code, Excerpt: excerpt, Duration: time.Duration(step) * 100 * time.Millisecond}
			if held, err := outbox.Finish(ctx, d, rows[0], "w", u, at, nil); err != nil || !held {
				t.Fatalf("attempt %d: held %v, %v", step, held, err)
			}
			return rows[0]
		}
		redeliver := func(c outbox.Claimed) {
			t.Helper()
			if err := d.Tx(ctx, func(tx *gorm.DB) error {
				return outbox.Requeue(tx, tid, wh, c.ID, t0.Add(time.Duration(step)*time.Minute+time.Second))
			}); err != nil {
				t.Fatal(err)
			}
		}
		gone, refused := "target answered 410", "connection refused"
		c := attempt(outbox.Update{Status: outbox.Failed, LastError: &gone}, 410, "gone") // final: moved to the history
		redeliver(c)
		later := t0.Add(time.Hour)
		attempt(outbox.Update{Status: outbox.Pending, NextAttemptAt: &later, LastError: &refused}, 0, "") // a retry: stays live
		redeliver(c)
		attempt(outbox.Update{Status: outbox.Succeeded}, 200, "ok")

		as, err := outbox.Attempts(ctx, d.DB, tid, wh, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(as) != 3 {
			t.Fatalf("%d attempts listed; want 3: %+v", len(as), as)
		}
		want := []struct {
			code    int
			excerpt string
			errText string
		}{{410, "gone", gone}, {0, "", refused}, {200, "ok", ""}}
		for i, a := range as {
			w := want[i]
			code, excerpt, errText := 0, "", ""
			if a.StatusCode != nil {
				code = *a.StatusCode
			}
			if a.ResponseExcerpt != nil {
				excerpt = *a.ResponseExcerpt
			}
			if a.Error != nil {
				errText = *a.Error
			}
			at := t0.Add(time.Duration(i+1) * time.Minute)
			if a.N != i+1 || !a.AttemptedAt.Equal(at) || code != w.code || excerpt != w.excerpt || errText != w.errText || a.DurationMS != int64(i+1)*100 {
				t.Errorf("attempt %d: %+v (at %v); want n %d at %v, %d %q %q, %d ms", i, a, a.AttemptedAt, i+1, at, w.code, w.excerpt, w.errText, (i+1)*100)
			}
		}
		// Another registration's id does not reach them.
		if as, err := outbox.Attempts(ctx, d.DB, tid, wh+1, c.ID); err != nil || len(as) != 0 {
			t.Fatalf("through another registration: %d attempts, %v", len(as), err)
		}
		if err := d.Tx(ctx, func(tx *gorm.DB) error { return outbox.DeleteDeliveries(tx, tid, wh) }); err != nil {
			t.Fatal(err)
		}
		var left int64
		if err := d.Table("delivery_attempts").Where("tenant_id = ?", tid).Count(&left).Error; err != nil || left != 0 {
			t.Fatalf("%d attempts left after the deliveries were deleted, %v", left, err)
		}
	})
}
