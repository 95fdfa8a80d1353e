package outbox_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// Known attempts land in known buckets, on both dialects: per interval,
// the count, the 2xx answers and the mean and longest duration; an
// interval without attempts is there with zeros; attempts before the
// range, after now, or of another registration are left out.
func TestAttemptBuckets(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		tid := tenant.ID(f.ctx)
		wh := f.webhook(outbox.ActCreated, "https://example.com/hook", true, f.userID)
		other := f.webhook(outbox.ActCreated, "https://example.com/other", true, f.userID)
		_, ev := f.emit(&outbox.Outbox{}, outbox.ActCreated)
		now := time.Date(2026, 11, 27, 15, 30, 0, 0, time.UTC)
		n := 0
		add := func(webhook int64, at time.Time, code, ms int) {
			t.Helper()
			n++
			row := map[string]any{"tenant_id": tid, "delivery_id": uuid.NewString(), "n": n, "webhook_id": webhook, "event_id": ev,
				"attempted_at": at, "duration_ms": ms}
			if code != 0 {
				row["status_code"] = code
			} else {
				row["error"] = "connection refused"
			}
			if err := d.Table("delivery_attempts").Create(row).Error; err != nil {
				t.Fatal(err)
			}
		}
		add(wh, now.Add(-20*time.Minute), 200, 100)                      // 15:10
		add(wh, now.Add(-10*time.Minute), 500, 300)                      // 15:20
		add(wh, time.Date(2026, 11, 27, 13, 59, 59, 0, time.UTC), 0, 50) // no answer
		add(wh, time.Date(2026, 11, 27, 14, 0, 0, 0, time.UTC), 204, 10) // the next hour's first second
		add(wh, time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC), 299, 40) // two days ago
		add(wh, now.Add(-8*24*time.Hour), 200, 1)                        // before both ranges
		add(wh, now.Add(3*time.Hour), 200, 1)                            // past the last interval of both (18:30)
		add(other, now.Add(-15*time.Minute), 200, 1)                     // another registration

		day, err := outbox.AttemptBuckets(f.ctx, d.DB, tid, wh, now, time.Hour, 24)
		if err != nil {
			t.Fatal(err)
		}
		if len(day) != 24 || !day[0].Start.Equal(time.Date(2026, 11, 26, 16, 0, 0, 0, time.UTC)) || !day[23].Start.Equal(time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)) {
			t.Fatalf("day: %d buckets from %v to %v", len(day), day[0].Start, day[len(day)-1].Start)
		}
		want := map[int]outbox.Bucket{
			21: {Attempts: 1, Succeeded: 0, AvgMS: 50, MaxMS: 50},
			22: {Attempts: 1, Succeeded: 1, AvgMS: 10, MaxMS: 10},
			23: {Attempts: 2, Succeeded: 1, AvgMS: 200, MaxMS: 300},
		}
		check(t, "day", day, want)
		if r, ok := day[23].SuccessRate(); !ok || r != 0.5 {
			t.Fatalf("success rate of the last hour: %v %v", r, ok)
		}
		if _, ok := day[0].SuccessRate(); ok {
			t.Fatal("a success rate without attempts")
		}

		week, err := outbox.AttemptBuckets(f.ctx, d.DB, tid, wh, now, 6*time.Hour, 28)
		if err != nil {
			t.Fatal(err)
		}
		if !week[0].Start.Equal(time.Date(2026, 11, 20, 18, 0, 0, 0, time.UTC)) || !week[27].Start.Equal(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)) {
			t.Fatalf("week: from %v to %v", week[0].Start, week[27].Start)
		}
		check(t, "week", week, map[int]outbox.Bucket{
			18: {Attempts: 1, Succeeded: 1, AvgMS: 40, MaxMS: 40},
			27: {Attempts: 4, Succeeded: 2, AvgMS: 115, MaxMS: 300}, // (100+300+50+10)/4
		})
	})
}

func check(t *testing.T, what string, got []outbox.Bucket, want map[int]outbox.Bucket) {
	t.Helper()
	for i, b := range got {
		w := want[i]
		if b.Attempts != w.Attempts || b.Succeeded != w.Succeeded || b.AvgMS != w.AvgMS || b.MaxMS != w.MaxMS {
			t.Errorf("%s bucket %d (%v): %+v; want %+v", what, i, b.Start, b, w)
		}
	}
}
