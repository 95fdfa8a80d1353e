package delivery_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/delivery"
	"github.com/finsvc/finsvc/internal/webhooks/httpclient"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// deadReceiver never answers: each request hangs until the worker gives up
// on it (the attempt timeout closes the connection) or the test ends. It
// counts the requests.
type deadReceiver struct {
	*httptest.Server
	requests atomic.Int64
}

func newDeadReceiver(t testing.TB) *deadReceiver {
	rc := &deadReceiver{}
	done := make(chan struct{})
	rc.Server = httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		// Read the body first: only then does the server watch the
		// connection and cancel r.Context() when the client gives up.
		_, _ = io.Copy(io.Discard, r.Body)
		rc.requests.Add(1)
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(func() { close(done); rc.Server.Close() })
	return rc
}

// watchInflight samples, until stop is closed, how many deliveries of the
// registration are leased (in flight: the test's clock is frozen, so no
// lease expires) and returns the most it saw. The receiver cannot tell:
// it notices that the worker gave up on a request only after the worker
// may already have started the next one.
func (f *fixture) watchInflight(webhookID int64, stop <-chan struct{}) func() int64 {
	var most atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var n int64
			if err := f.db.Table("deliveries").Where("tenant_id = ? AND webhook_id = ? AND status = ?", f.tid, webhookID, string(outbox.Delivering)).
				Count(&n).Error; err == nil && n > most.Load() {
				most.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return func() int64 { <-done; return most.Load() }
}

// Issue 19: beside a registration whose receiver never answers within the
// timeout, a healthy registration gets every one of its events, while the
// broken one keeps its share: it is attempted (never beyond its cap), then
// backed off, and all its deliveries are still there, pending, on their
// retry schedule.
//
// The worker runs for real (its loop, its attempt timeout, shortened to
// 1 s: short enough to keep the test to seconds, long enough that a
// healthy attempt on a loaded machine under -race does not time out) on a
// frozen clock: retries and the breaker's pause never come due
// during the test and leases never expire, so what the broken registration
// may do is fixed by its cap and the breaker alone.
func TestHealthyEndpointGetsEveryEventBesideADeadOne(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		const events, endpointCap = 200, 2
		f := newFixture(t, d)
		healthy := newReceiver(t, false)
		healthy.arrived = make(chan string, events)
		dead := newDeadReceiver(t)
		broken, _ := f.register(outbox.ActCreated, dead.URL)
		good, _ := f.register(outbox.ActCreated, healthy.URL)
		f.emit(outbox.ActCreated, events, nil, nil)

		clk := newClock()
		w := f.worker(delivery.WithNow(clk.Now), delivery.WithRand(fixedRand),
			delivery.WithClientOptions(httpclient.Options{Timeout: time.Second}),
			delivery.WithLease(time.Minute), delivery.WithConcurrency(8),
			delivery.WithEndpointConcurrency(endpointCap), delivery.WithPollInterval(20*time.Millisecond))
		stop := make(chan struct{})
		mostInflight := f.watchInflight(broken.ID, stop)
		if err := w.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		timeout := time.After(60 * time.Second) // a failsafe; the run takes a few seconds
		for len(seen) < events {
			select {
			case id := <-healthy.arrived:
				seen[id]++
			case <-timeout:
				w.Stop(context.Background())
				close(stop)
				t.Fatalf("the healthy receiver got %d of %d events", len(seen), events)
			}
		}
		// The broken registration has been tried: wait (bounded) for its
		// circuit to open, then stop, letting attempts in flight time out
		// and be recorded.
		for deadline := time.Now().Add(30 * time.Second); f.webhookRow(broken.ID).HealthState(clk.Now()) != outbox.BackingOff; {
			if time.Now().After(deadline) {
				t.Fatalf("the broken registration's circuit never opened: %+v", f.webhookRow(broken.ID))
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := w.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		close(stop)

		for id, n := range seen {
			if n != 1 {
				t.Fatalf("event %s reached the healthy receiver %d times", id, n)
			}
		}
		if m := mostInflight(); m > endpointCap {
			t.Fatalf("%d deliveries of the broken registration were in flight at once; its cap is %d", m, endpointCap)
		}
		var ok, pending, attempted, attempts int
		for _, r := range f.rows() {
			switch r.WebhookID {
			case good.ID:
				if r.Status == outbox.Succeeded {
					ok++
				}
			case broken.ID:
				if r.Status != outbox.Pending || r.NextAttemptAt == nil {
					t.Fatalf("a delivery of the broken registration is %s (next attempt %v); want every one pending", r.Status, r.NextAttemptAt)
				}
				pending++
				attempts += r.Attempts
				if r.Attempts > 0 {
					attempted++
					if !r.NextAttemptAt.After(clk.Now()) || str(r.LastError) == "" {
						t.Fatalf("an attempted delivery of the broken registration is due at %v (now %v), last error %q; want it on the retry schedule", r.NextAttemptAt, clk.Now(), str(r.LastError))
					}
				}
			}
		}
		mustEqual(t, "succeeded deliveries to the healthy registration", ok, events)
		mustEqual(t, "pending deliveries of the broken registration", pending, events)
		mustEqual(t, "attempts recorded for the broken registration", int64(attempts), dead.requests.Load())
		// It held its share: tried until the breaker opened (TripAfter
		// failures), and not much more (what was in flight then, and a
		// claim that ran just before the circuit was recorded open).
		if attempts < outbox.TripAfter || attempts > outbox.TripAfter+2*endpointCap {
			t.Fatalf("the broken registration was attempted %d times; want %d to %d", attempts, outbox.TripAfter, outbox.TripAfter+2*endpointCap)
		}
		mustEqual(t, "attempted deliveries of the broken registration", attempted, attempts)
		t.Logf("broken registration: %d attempts, at most %d in flight", attempts, mostInflight())
	})
}
