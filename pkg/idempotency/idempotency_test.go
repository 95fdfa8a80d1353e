package idempotency_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/finsvc/finsvc/pkg/db"
	"github.com/finsvc/finsvc/pkg/idempotency"
	"github.com/finsvc/finsvc/pkg/testdb"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func begin(t *testing.T, s *idempotency.Store, r idempotency.Request) (idempotency.Outcome, *idempotency.Result) {
	t.Helper()
	o, res, err := s.Begin(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return o, res
}

func TestBeginFinishReplayExpire(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		_, tn := testdb.NewTenant(t, d, "acme")
		clk := &clock{t: time.Now().UTC()}
		s := idempotency.New(d, clk.now)
		r := idempotency.Request{TenantID: tn.ID, ClientID: "app", Key: "k", Method: "POST", Path: "/api/1.0/clients", Digest: "d1"}

		if o, _ := begin(t, s, r); o != idempotency.Run {
			t.Fatalf("first Begin = %v; want Run", o)
		}
		if o, _ := begin(t, s, r); o != idempotency.Running {
			t.Fatalf("Begin while running = %v; want Running", o)
		}
		other := r
		other.Digest = "d2"
		if o, _ := begin(t, s, other); o != idempotency.Mismatch {
			t.Fatalf("Begin with another body = %v; want Mismatch", o)
		}
		want := idempotency.Result{Status: 201, ContentType: "application/json", Location: "/x", Body: []byte(`{"id":1}`)}
		if err := s.Finish(context.Background(), r, want); err != nil {
			t.Fatal(err)
		}
		o, got := begin(t, s, r)
		if o != idempotency.Replay || got.Status != 201 || string(got.Body) != `{"id":1}` || got.ContentType != want.ContentType || got.Location != "/x" {
			t.Fatalf("Begin after Finish = %v %+v", o, got)
		}
		// Past the TTL the key is free again, and the purge takes it.
		clk.advance(idempotency.TTL + time.Second)
		n, err := idempotency.Purge(context.Background(), d, clk.now(), 100)
		if err != nil || n != 1 {
			t.Fatalf("Purge = %d, %v; want 1", n, err)
		}
		if o, _ := begin(t, s, other); o != idempotency.Run {
			t.Fatalf("Begin after expiry = %v; want Run", o)
		}
		if n, _ := idempotency.Purge(context.Background(), d, clk.now(), 100); n != 0 {
			t.Fatalf("Purge took a live key")
		}
		// Expired but not yet purged: Begin replaces it.
		if err := s.Finish(context.Background(), other, want); err != nil {
			t.Fatal(err)
		}
		clk.advance(idempotency.TTL + time.Second)
		if o, _ := begin(t, s, r); o != idempotency.Run {
			t.Fatalf("Begin over an expired key = %v; want Run", o)
		}
	})
}

// A released key runs again; a claim whose replica died (neither finished
// nor released) lapses after Lease and is taken over by one caller.
func TestReleaseAndLapsedLease(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		_, tn := testdb.NewTenant(t, d, "acme")
		clk := &clock{t: time.Now().UTC()}
		s := idempotency.New(d, clk.now)
		r := idempotency.Request{TenantID: tn.ID, ClientID: "app", Key: "k", Method: "POST", Path: "/p", Digest: "d"}
		begin(t, s, r)
		if err := s.Release(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		if o, _ := begin(t, s, r); o != idempotency.Run {
			t.Fatalf("Begin after Release = %v; want Run", o)
		}
		clk.advance(idempotency.Lease - time.Second)
		if o, _ := begin(t, s, r); o != idempotency.Running {
			t.Fatalf("Begin within the lease = %v; want Running", o)
		}
		clk.advance(2 * time.Second)
		if o, _ := begin(t, s, r); o != idempotency.Run {
			t.Fatalf("Begin after the lease = %v; want Run (take over)", o)
		}
		if o, _ := begin(t, s, r); o != idempotency.Running {
			t.Fatalf("Begin after the take-over = %v; want Running", o)
		}
	})
}

// Callers racing on one key: exactly one runs, on both dialects.
func TestBeginRace(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		_, tn := testdb.NewTenant(t, d, "acme")
		s := idempotency.New(d, nil)
		for round := range 5 {
			r := idempotency.Request{TenantID: tn.ID, ClientID: "app", Key: string(rune('a' + round)), Method: "POST", Path: "/p", Digest: "d"}
			var runs, running atomic.Int32
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					o, _, err := s.Begin(context.Background(), r)
					if err != nil {
						t.Error(err)
						return
					}
					switch o {
					case idempotency.Run:
						runs.Add(1)
					case idempotency.Running:
						running.Add(1)
					}
				})
			}
			wg.Wait()
			if runs.Load() != 1 || running.Load() != 7 {
				t.Fatalf("round %d: %d ran, %d told running; want 1 and 7", round, runs.Load(), running.Load())
			}
		}
	})
}
