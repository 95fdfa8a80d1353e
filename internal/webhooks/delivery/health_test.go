package delivery_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/delivery"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
)

func (f *fixture) webhookRow(id int64) registry.Webhook {
	f.t.Helper()
	var w registry.Webhook
	if err := f.db.Table("webhooks").Where("tenant_id = ? AND id = ?", f.tid, id).Take(&w).Error; err != nil {
		f.t.Fatal(err)
	}
	return w
}

// A registration whose attempts keep failing is backed off as a whole:
// after outbox.TripAfter failures the claim skips it (its due deliveries
// stay pending and occupy no worker), then lets one probe through, and a
// successful probe restores its full cap.
func TestFailingEndpointIsBackedOffAsAWhole(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		var up atomic.Bool
		rc := newReceiver(t, false)
		rc.respond = func(w http.ResponseWriter, _ *received) {
			if up.Load() {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		wh, _ := f.register(outbox.ActCreated, rc.URL)
		f.emit(outbox.ActCreated, 10, nil, nil)
		clk := newClock()
		w := f.worker(delivery.WithNow(clk.Now), delivery.WithRand(fixedRand), delivery.WithConcurrency(8), delivery.WithEndpointConcurrency(2))

		// Two attempts (the cap), two failures: still closed.
		if n, err := w.RunOnce(f.ctx); err != nil || n != 2 {
			t.Fatalf("first RunOnce = %d, %v; want the cap of 2", n, err)
		}
		h := f.webhookRow(wh.ID)
		mustEqual(t, "state after 2 failures", h.HealthState(clk.Now()), outbox.Failing)
		mustEqual(t, "consecutive failures", h.ConsecutiveFailures, 2)
		mustEqual(t, "last failure reason", str(h.LastFailureReason), "target answered 503")
		// Two more: the third opens the circuit, the fourth doubles the pause.
		if n, _ := w.RunOnce(f.ctx); n != 2 {
			t.Fatalf("second RunOnce claimed %d", n)
		}
		h = f.webhookRow(wh.ID)
		mustEqual(t, "state after 4 failures", h.HealthState(clk.Now()), outbox.BackingOff)
		if h.CircuitOpenUntil == nil || !h.CircuitOpenUntil.Equal(clk.Now().Add(outbox.BreakerPause(4))) {
			t.Fatalf("circuit open until %v; want now + %s", h.CircuitOpenUntil, outbox.BreakerPause(4))
		}
		// Open: six deliveries are due, none is claimed.
		if n, _ := w.RunOnce(f.ctx); n != 0 {
			t.Fatalf("claimed %d while the circuit is open", n)
		}
		var pending int64
		f.db.Table("deliveries").Where("tenant_id = ? AND status = 'pending'", f.tid).Count(&pending)
		mustEqual(t, "pending while backed off", pending, int64(10))

		// Half-open after the pause: one probe at a time.
		clk.Advance(outbox.BreakerPause(4) + time.Second)
		if n, _ := w.RunOnce(f.ctx); n != 1 {
			t.Fatalf("half-open RunOnce claimed %d; want 1 probe", n)
		}
		mustEqual(t, "state after a failed probe", f.webhookRow(wh.ID).HealthState(clk.Now()), outbox.BackingOff)
		clk.Advance(outbox.BreakerPause(5) + time.Second)
		up.Store(true)
		if n, _ := w.RunOnce(f.ctx); n != 1 {
			t.Fatalf("second probe claimed %d", n)
		}
		h = f.webhookRow(wh.ID)
		mustEqual(t, "state after a successful probe", h.HealthState(clk.Now()), outbox.Healthy)
		mustEqual(t, "consecutive failures after success", h.ConsecutiveFailures, 0)
		if h.LastSuccessAt == nil || h.FailingSince != nil || h.CircuitOpenUntil != nil {
			t.Fatalf("after success: last success %v, failing since %v, open until %v", h.LastSuccessAt, h.FailingSince, h.CircuitOpenUntil)
		}
		// Closed again: the full cap.
		if n, _ := w.RunOnce(f.ctx); n != 2 {
			t.Fatalf("closed RunOnce claimed %d; want 2", n)
		}
	})
}

// A registration whose every attempt has failed for 5 days is disabled by
// the next failure: inactive, with a reason and a time, its pending
// deliveries cancelled.
func TestEndpointFailingForFiveDaysIsDisabled(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		rc := newReceiver(t, false)
		rc.respond = func(w http.ResponseWriter, _ *received) { w.WriteHeader(http.StatusInternalServerError) }
		wh, _ := f.register(outbox.ActCreated, rc.URL)
		f.emit(outbox.ActCreated, 3, nil, nil)
		clk := newClock()
		w := f.worker(delivery.WithNow(clk.Now), delivery.WithRand(fixedRand), delivery.WithEndpointConcurrency(1))

		// Failing for just under 5 days: still active.
		since := clk.Now().Add(-outbox.AutoDisableAfter + time.Minute)
		f.db.Table("webhooks").Where("tenant_id = ? AND id = ?", f.tid, wh.ID).Updates(map[string]any{"failing_since": since, "consecutive_failures": 1})
		if n, _ := w.RunOnce(f.ctx); n != 1 {
			t.Fatalf("RunOnce claimed %d", n)
		}
		if h := f.webhookRow(wh.ID); !h.Active || h.DisabledAt != nil {
			t.Fatalf("disabled before 5 days: %+v", h)
		}
		// Two minutes later the run has lasted 5 days.
		clk.Advance(2 * time.Minute)
		if n, _ := w.RunOnce(f.ctx); n != 1 {
			t.Fatalf("RunOnce claimed %d", n)
		}
		h := f.webhookRow(wh.ID)
		if h.Active || str(h.DisabledReason) != outbox.AutoDisableReason || h.DisabledAt == nil || !h.DisabledAt.Equal(clk.Now()) {
			t.Fatalf("after 5 days of failures: active %v, reason %q, at %v", h.Active, str(h.DisabledReason), h.DisabledAt)
		}
		var pending int64
		f.db.Table("deliveries").Where("tenant_id = ? AND status = 'pending' AND webhook_id = ?", f.tid, wh.ID).Count(&pending)
		mustEqual(t, "pending deliveries of the disabled registration", pending, int64(0))

		// Re-enabling by PATCH starts afresh.
		active := true
		up, err := f.store.Update(f.ctx, f.owner(), wh.ID, registry.Patch{Active: &active})
		if err != nil {
			t.Fatal(err)
		}
		if !up.Active || up.DisabledReason != nil || up.DisabledAt != nil || up.ConsecutiveFailures != 0 || up.FailingSince != nil || up.CircuitOpenUntil != nil {
			t.Fatalf("re-enabled %+v", up)
		}
	})
}
