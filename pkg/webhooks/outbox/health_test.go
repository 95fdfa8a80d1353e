package outbox_test

import (
	"sync"
	"testing"
	"time"

	"github.com/finsvc/finsvc/pkg/db"
	"github.com/finsvc/finsvc/pkg/tenant"
	"github.com/finsvc/finsvc/pkg/testdb"
	"github.com/finsvc/finsvc/pkg/webhooks/outbox"
)

// Failures recorded together (a registration's attempts run in parallel up
// to its cap) leave the pause of the longest run, never an earlier, shorter
// one that happened to commit last.
func TestConcurrentFailuresKeepTheLongestPause(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		wh := f.webhook(outbox.ActCreated, "https://example.com/hook", true, f.userID)
		now := time.Now().UTC().Truncate(time.Second)
		// Five together: the 3rd, 4th and 5th failures each want a
		// different pause (BreakerPause doubles up to its cap at the 8th).
		const workers = 5
		for round := range 20 {
			if err := d.Table("webhooks").Where("tenant_id = ? AND id = ?", tenant.ID(f.ctx), wh).
				Updates(map[string]any{"consecutive_failures": 0, "failing_since": nil, "circuit_open_until": nil}).Error; err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := outbox.RecordHealth(f.ctx, d, tenant.ID(f.ctx), wh, false, "target answered 503", now); err != nil {
						errs <- err
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			checkPause(t, d, f, wh, round, workers, now)
		}
	})
}

func checkPause(t *testing.T, d *db.DB, f *fixture, wh int64, round, failures int, now time.Time) {
	t.Helper()
	var row struct {
		ConsecutiveFailures int       `gorm:"column:consecutive_failures"`
		CircuitOpenUntil    time.Time `gorm:"column:circuit_open_until"`
	}
	if err := d.Table("webhooks").Where("tenant_id = ? AND id = ?", tenant.ID(f.ctx), wh).Take(&row).Error; err != nil {
		t.Fatal(err)
	}
	if row.ConsecutiveFailures != failures {
		t.Fatalf("round %d: consecutive failures = %d; want %d", round, row.ConsecutiveFailures, failures)
	}
	if want := now.Add(outbox.BreakerPause(failures)); !row.CircuitOpenUntil.Equal(want) {
		t.Fatalf("round %d: circuit open until %v; want %v", round, row.CircuitOpenUntil, want)
	}
}
