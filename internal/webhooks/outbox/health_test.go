package outbox_test

import (
	"sync"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/internal/webhooks/retry"
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

type healthRow struct {
	ConsecutiveFailures int       `gorm:"column:consecutive_failures"`
	FailingSince        time.Time `gorm:"column:failing_since"`
}

func (f *fixture) health(wh int64) healthRow {
	f.t.Helper()
	var row healthRow
	if err := f.d.Table("webhooks").Where("tenant_id = ? AND id = ?", tenant.ID(f.ctx), wh).Take(&row).Error; err != nil {
		f.t.Fatal(err)
	}
	return row
}

func (f *fixture) fail(wh int64, at time.Time) (disable bool) {
	f.t.Helper()
	disable, err := outbox.RecordHealth(f.ctx, f.d, tenant.ID(f.ctx), wh, false, "target answered 503", at)
	if err != nil {
		f.t.Fatal(err)
	}
	return disable
}

// Only a continuous run of failures leads to auto-disabling: an endpoint
// that failed once, had nothing to deliver for 5 days and then fails once
// more has failed twice, not for 5 days. An endpoint failing at every
// attempt, however far apart the retry schedule spaces them, is disabled
// after 5 days.
func TestAutoDisableCountsOnlyAContinuousFailureRun(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		quiet := f.webhook(outbox.ActCreated, "https://quiet.example/h", true, f.userID)
		t0 := time.Now().UTC().Truncate(time.Second)
		if f.fail(quiet, t0) {
			t.Fatal("disabled after one failure")
		}
		later := t0.Add(outbox.AutoDisableAfter + time.Minute)
		if f.fail(quiet, later) {
			t.Fatal("disabled after two failures 5 days apart with nothing in between")
		}
		if h := f.health(quiet); !h.FailingSince.Equal(later) || h.ConsecutiveFailures != 1 {
			t.Fatalf("after the gap: failing since %v, %d consecutive failures; want a new run from %v", h.FailingSince, h.ConsecutiveFailures, later)
		}

		// Failures just under FailureRunGap apart are one run.
		dead := f.webhook(outbox.ActCreated, "https://dead.example/h", true, f.userID)
		step := outbox.FailureRunGap - time.Minute
		at := t0
		for n := 1; ; n++ {
			disable := f.fail(dead, at)
			if h := f.health(dead); !h.FailingSince.Equal(t0) || h.ConsecutiveFailures != n {
				t.Fatalf("failure %d at %v: failing since %v, %d consecutive; want one run since %v", n, at, h.FailingSince, h.ConsecutiveFailures, t0)
			}
			if want := at.Sub(t0) >= outbox.AutoDisableAfter; disable != want {
				t.Fatalf("failure %d, %s into the run: disable = %v, want %v", n, at.Sub(t0), disable, want)
			}
			if disable {
				break
			}
			at = at.Add(step)
		}
	})
}

// FailureRunGap must exceed every wait a failing registration's next
// attempt can have: the retry schedule's longest step with the most jitter,
// and a Retry-After at its cap, plus the open circuit's longest pause.
func TestFailureRunGapExceedsEveryRetryWait(t *testing.T) {
	for attempt := 1; attempt < retry.MaxAttempts; attempt++ {
		d, _ := retry.Delay(attempt, func() float64 { return 0.999999 })
		if d+outbox.BreakerMax >= outbox.FailureRunGap {
			t.Errorf("retry %d waits up to %s; FailureRunGap is %s", attempt, d, outbox.FailureRunGap)
		}
	}
	if retry.MaxRetryAfter+outbox.BreakerMax >= outbox.FailureRunGap {
		t.Errorf("a Retry-After can defer the next attempt by %s; FailureRunGap is %s", retry.MaxRetryAfter, outbox.FailureRunGap)
	}
}
