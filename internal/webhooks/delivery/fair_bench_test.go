package delivery_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/delivery"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// fairDuration bounds each BenchmarkFairLatency run. It must outlast the
// attempt timeout (15 s) for the broken endpoints' attempts to time out and
// be claimed again during the run.
var fairDuration = flag.Duration("fair.duration", 20*time.Second, "how long each BenchmarkFairLatency run emits events")

// brokenEndpoints registers n registrations of act.created whose receivers
// never answer: every event also queues one delivery for each, and each
// attempt holds a worker slot until the real attempt timeout.
func (f *fixture) brokenEndpoints(b *testing.B, n int) {
	for range n {
		f.register(outbox.ActCreated, newDeadReceiver(b).URL)
	}
}

// slowEndpoints registers n registrations of act.created whose receivers
// answer 202 after 5 s: they never trip the circuit breaker, so each holds
// its cap of workers for the whole run.
func (f *fixture) slowEndpoints(b *testing.B, n int) {
	for range n {
		rc := newReceiver(b, false)
		rc.respond = func(w http.ResponseWriter, _ *received) {
			time.Sleep(5 * time.Second)
			w.WriteHeader(http.StatusAccepted)
		}
		f.register(outbox.ActCreated, rc.URL)
	}
}

// stopSoon stops the worker, giving attempts in flight (the broken
// endpoints' hang until their timeout) a second before they are aborted and
// released.
func stopSoon(w *delivery.Worker) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	w.Stop(ctx)
}

// BenchmarkFairLatency: fair claiming keeps a healthy endpoint fast beside
// failing ones. It measures a healthy endpoint's enqueue → receipt
// latency with 0, 1 and 10 endpoints that never answer beside it, or one
// that answers after 5 s (slow5s=1), in the
// same tenant, subscribed to the same event. The worker has the production
// defaults (32 attempts at once, 2 per endpoint, a 15 s attempt timeout) and
// wakes on the in-process signal only, as BenchmarkEnqueueToReceipt does.
// Each run emits one event at a time for -fair.duration (b.N is not used:
// run it with -benchtime 1x).
//
//	FINSVC_TEST_DATABASE_URL=… go test -run '^$' -bench BenchmarkFairLatency -benchtime 1x ./internal/webhooks/delivery/
func BenchmarkFairLatency(b *testing.B) {
	for _, c := range []struct{ broken, slow int }{{0, 0}, {0, 1}, {1, 0}, {10, 0}} {
		name := fmt.Sprintf("broken=%d", c.broken)
		if c.slow > 0 {
			name = fmt.Sprintf("slow5s=%d", c.slow)
		}
		b.Run(name, func(b *testing.B) {
			f := newFixture(b, testdb.Postgres(b))
			rc := newReceiver(b, false)
			rc.arrived = make(chan string, 16)
			f.register(outbox.ActCreated, rc.URL)
			f.brokenEndpoints(b, c.broken)
			f.slowEndpoints(b, c.slow)
			w := f.worker(delivery.WithPollInterval(time.Hour))
			if err := w.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			defer stopSoon(w)
			var lat []time.Duration
			b.ResetTimer()
			for end := time.Now().Add(*fairDuration); time.Now().Before(end); {
				t0 := time.Now()
				id := f.emit(outbox.ActCreated, 1, nil, w.Notifier())[0]
				for got := <-rc.arrived; got != id; got = <-rc.arrived {
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(len(lat)), "events")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
		})
	}
}

// BenchmarkFairThroughput: deliveries per second to 8 healthy
// endpoints with 0, 1 and 10 endpoints that never answer beside them. b.N
// events are queued first (each one delivery per registration); the clock
// runs until the healthy receivers have all 8·b.N. Worker as in
// production (32 at once, 2 per endpoint, 15 s timeout), polling every
// 10 ms as BenchmarkDeliveryThroughput does.
//
//	FINSVC_TEST_DATABASE_URL=… go test -run '^$' -bench BenchmarkFairThroughput -benchtime 500x ./internal/webhooks/delivery/
func BenchmarkFairThroughput(b *testing.B) {
	const healthy = 8
	for _, broken := range []int{0, 1, 10} {
		b.Run(fmt.Sprintf("broken=%d", broken), func(b *testing.B) {
			f := newFixture(b, testdb.Postgres(b))
			rc := newReceiver(b, false)
			rc.arrived = make(chan string, healthy*b.N+16)
			for i := range healthy {
				f.register(outbox.ActCreated, fmt.Sprintf("%s/h%d", rc.URL, i))
			}
			f.brokenEndpoints(b, broken)
			for left := b.N; left > 0; left -= 500 {
				f.emit(outbox.ActCreated, min(left, 500), nil, nil)
			}
			w := f.worker(delivery.WithPollInterval(10 * time.Millisecond))
			b.ResetTimer()
			start := time.Now()
			if err := w.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			for range healthy * b.N {
				<-rc.arrived
			}
			elapsed := time.Since(start)
			b.StopTimer()
			stopSoon(w)
			b.ReportMetric(float64(healthy*b.N)/elapsed.Seconds(), "deliveries/s")
		})
	}
}
