package idempotency_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/idempotency"
	"github.com/finsvc/finsvc/internal/keyring"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/testdb"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func box(t *testing.T) *sealing.Box {
	t.Helper()
	b, err := sealing.NewFor(keyring.MustNew("a global secret of the test, long enough"), "finsvc idempotency test v1")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// probe is the effect the runs below write: one row per run.
func probe(t *testing.T, d *db.DB) (write func(ctx context.Context, v string) error, count func() int64) {
	t.Helper()
	if err := d.Exec("CREATE TABLE idem_probe (v text NOT NULL)").Error; err != nil {
		t.Fatal(err)
	}
	write = func(ctx context.Context, v string) error {
		return d.Tx(ctx, func(tx *gorm.DB) error { return tx.Exec("INSERT INTO idem_probe (v) VALUES (?)", v).Error })
	}
	count = func() int64 {
		var n int64
		if err := d.Table("idem_probe").Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	return write, count
}

func do(t *testing.T, s *idempotency.Store, r idempotency.Request, run func(context.Context) (idempotency.Result, idempotency.Disposition)) (idempotency.Outcome, *idempotency.Result) {
	t.Helper()
	o, res, err := s.Do(context.Background(), r, run)
	if err != nil {
		t.Fatal(err)
	}
	return o, res
}

// The first request runs and its outcome is kept with its effect; a retry
// gets it back and runs nothing; another body is a mismatch; another user
// or app of the same key is another key; past the TTL the key is free, and
// the purge takes it.
func TestDoRunsOnceAndReplays(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		_, tn := testdb.NewTenant(t, d, "acme")
		clk := &clock{t: time.Now().UTC()}
		s := idempotency.New(d, box(t), clk.now)
		write, count := probe(t, d)
		runs := 0
		run := func(ctx context.Context) (idempotency.Result, idempotency.Disposition) {
			runs++
			if err := write(ctx, "x"); err != nil {
				t.Error(err)
			}
			return idempotency.Result{Status: 201, ContentType: "application/json", Location: "/x", Body: []byte(`{"id":1}`)}, idempotency.Commit
		}
		r := idempotency.Request{TenantID: tn.ID, ClientID: "app", UserID: 7, Key: "k", Method: "POST", Path: "/api/1.0/clients", Digest: "d1", RequestID: "req-1"}
		if o, res := do(t, s, r, run); o != idempotency.Ran || res.Status != 201 {
			t.Fatalf("first Do = %v %+v; want Ran 201", o, res)
		}
		again := r
		again.RequestID = "req-2"
		o, res := do(t, s, again, run)
		if o != idempotency.Replayed || res.Status != 201 || string(res.Body) != `{"id":1}` || res.Location != "/x" ||
			res.ContentType != "application/json" || res.RequestID != "req-1" {
			t.Fatalf("retry = %v %+v; want the stored result of req-1", o, res)
		}
		other := r
		other.Digest = "d2"
		if o, _ := do(t, s, other, run); o != idempotency.Mismatch {
			t.Fatalf("another body = %v; want Mismatch", o)
		}
		if runs != 1 || count() != 1 {
			t.Fatalf("%d runs, %d effects; want 1 and 1", runs, count())
		}
		for _, r2 := range []idempotency.Request{
			{TenantID: tn.ID, ClientID: "app", UserID: 8, Key: "k", Method: "POST", Path: r.Path, Digest: "d1"},
			{TenantID: tn.ID, ClientID: "app2", UserID: 7, Key: "k", Method: "POST", Path: r.Path, Digest: "d1"},
		} {
			if o, _ := do(t, s, r2, run); o != idempotency.Ran {
				t.Fatalf("%+v: %v; want Ran (another principal's key)", r2, o)
			}
		}
		if runs != 3 {
			t.Fatalf("%d runs; want 3", runs)
		}
		// Expired: the key runs again, even with another body.
		clk.advance(idempotency.TTL + time.Second)
		if o, _ := do(t, s, other, run); o != idempotency.Ran {
			t.Fatalf("after the TTL = %v; want Ran", o)
		}
		n, err := idempotency.Purge(context.Background(), d, clk.now(), 100)
		if err != nil || n != 2 {
			t.Fatalf("Purge = %d, %v; want the 2 expired keys of the other principals", n, err)
		}
		if o, _ := do(t, s, other, run); o != idempotency.Replayed {
			t.Fatalf("the renewed key = %v; want Replayed (the purge kept it)", o)
		}
	})
}

// A 4xx keeps its result without its effects; a failure that decided
// nothing keeps neither, and the retry runs.
func TestDoDispositions(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		_, tn := testdb.NewTenant(t, d, "acme")
		s := idempotency.New(d, box(t), nil)
		write, count := probe(t, d)
		r := idempotency.Request{TenantID: tn.ID, ClientID: "app", UserID: 1, Key: "k", Method: "POST", Path: "/p", Digest: "d"}

		o, _ := do(t, s, r, func(ctx context.Context) (idempotency.Result, idempotency.Disposition) {
			_ = write(ctx, "half")
			return idempotency.Result{}, idempotency.Forget
		})
		if o != idempotency.Ran || count() != 0 {
			t.Fatalf("Forget: %v, %d effects; want Ran and 0", o, count())
		}
		o, _ = do(t, s, r, func(ctx context.Context) (idempotency.Result, idempotency.Disposition) {
			_ = write(ctx, "half")
			return idempotency.Result{Status: 409, ContentType: "application/json", Body: []byte(`{"code":"duplicate"}`)}, idempotency.KeepResult
		})
		if o != idempotency.Ran || count() != 0 {
			t.Fatalf("KeepResult: %v, %d effects; want Ran and 0", o, count())
		}
		o, res := do(t, s, r, func(context.Context) (idempotency.Result, idempotency.Disposition) {
			t.Fatal("a kept 409 ran again")
			return idempotency.Result{}, idempotency.Forget
		})
		if o != idempotency.Replayed || res.Status != 409 || string(res.Body) != `{"code":"duplicate"}` {
			t.Fatalf("retry of a kept 409 = %v %+v", o, res)
		}
	})
}

// Callers racing on one key: exactly one runs; the others are told it is
// in flight while it runs (at once, not after a lease) and, once it
// finished, get its result. The holder finishes only after some caller was
// told it is in flight, so the test does not depend on timing.
func TestDoRace(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		_, tn := testdb.NewTenant(t, d, "acme")
		s := idempotency.New(d, box(t), nil)
		write, count := probe(t, d)
		for round := range 4 {
			r := idempotency.Request{TenantID: tn.ID, ClientID: "app", UserID: 1, Key: string(rune('a' + round)), Method: "POST", Path: "/p", Digest: "d"}
			release := make(chan struct{})
			var releaseOnce sync.Once
			started := make(chan struct{})
			var ran, inflight, replayed atomic.Int32
			var wg sync.WaitGroup
			wg.Go(func() {
				o, _, err := s.Do(context.Background(), r, func(ctx context.Context) (idempotency.Result, idempotency.Disposition) {
					close(started)
					select {
					case <-release:
					case <-time.After(30 * time.Second):
						t.Error("no caller was told the key is in flight")
					}
					_ = write(ctx, "x")
					return idempotency.Result{Status: 201, Body: []byte("{}")}, idempotency.Commit
				})
				if err != nil || o != idempotency.Ran {
					t.Errorf("holder: %v %v", o, err)
				}
			})
			<-started
			for range 8 {
				wg.Go(func() {
					for {
						o, _, err := s.Do(context.Background(), r, func(context.Context) (idempotency.Result, idempotency.Disposition) {
							ran.Add(1)
							return idempotency.Result{Status: 201}, idempotency.Commit
						})
						if err != nil {
							t.Error(err)
							return
						}
						if o != idempotency.InFlight {
							if o == idempotency.Replayed {
								replayed.Add(1)
							}
							return
						}
						inflight.Add(1)
						releaseOnce.Do(func() { close(release) })
						time.Sleep(5 * time.Millisecond)
					}
				})
			}
			wg.Wait()
			if ran.Load() != 0 || replayed.Load() != 8 || inflight.Load() == 0 {
				t.Fatalf("round %d: %d ran again, %d told in flight, %d replayed; want 0, some and 8", round, ran.Load(), inflight.Load(), replayed.Load())
			}
		}
		if count() != 4 {
			t.Fatalf("%d effects; want 4", count())
		}
	})
}

// Two replicas (two stores on one PostgreSQL database): the key's claim is
// a transaction-scoped advisory lock. A second replica is told InFlight
// while the first runs; when the first one's connection dies mid-request
// (its process killed), the database releases the claim with the rolled
// back transaction and the retry runs at once, with no lease to wait out.
func TestDoAcrossReplicasAndDeadConnection(t *testing.T) {
	d := testdb.Postgres(t)
	_, tn := testdb.NewTenant(t, d, "acme")
	a := idempotency.New(d, box(t), nil)
	b := idempotency.New(d, box(t), nil)
	write, count := probe(t, d)
	r := idempotency.Request{TenantID: tn.ID, ClientID: "app", UserID: 1, Key: "k", Method: "POST", Path: "/p", Digest: "d"}

	pid := make(chan int64, 1)
	hold := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, err := a.Do(context.Background(), r, func(ctx context.Context) (idempotency.Result, idempotency.Disposition) {
			var p int64
			if err := d.WithContext(ctx).Raw("SELECT pg_backend_pid()").Scan(&p).Error; err != nil {
				t.Error(err)
			}
			_ = write(ctx, "x")
			pid <- p
			<-hold
			return idempotency.Result{Status: 201, Body: []byte("{}")}, idempotency.Commit
		})
		done <- err
	}()
	p := <-pid
	if o, _ := do(t, b, r, nil); o != idempotency.InFlight {
		t.Fatalf("the other replica while it runs: %v; want InFlight", o)
	}
	// The first replica's connection dies (its process killed).
	if err := d.Exec("SELECT pg_terminate_backend(?)", p).Error; err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var o idempotency.Outcome
	for {
		var err error
		o, _, err = b.Do(context.Background(), r, func(ctx context.Context) (idempotency.Result, idempotency.Disposition) {
			_ = write(ctx, "retry")
			return idempotency.Result{Status: 201, Body: []byte(`{"retry":true}`)}, idempotency.Commit
		})
		if err == nil && o != idempotency.InFlight || time.Since(start) > 5*time.Second {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if o != idempotency.Ran {
		t.Fatalf("the retry after the connection died: %v after %v; want Ran at once", o, time.Since(start))
	}
	close(hold)
	if err := <-done; err == nil {
		t.Fatal("the killed request committed")
	}
	if count() != 1 {
		t.Fatalf("%d effects; want 1 (the retry's)", count())
	}
	if o, res := do(t, a, r, nil); o != idempotency.Replayed || !strings.Contains(string(res.Body), "retry") {
		t.Fatalf("after: %v; want the retry's result replayed", o)
	}
}

// Stored bodies are sealed: the table holds no byte of a secret the
// response carried, and a sealed body copied to another key does not open.
func TestStoredBodyIsSealed(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		_, tn := testdb.NewTenant(t, d, "acme")
		s := idempotency.New(d, box(t), nil)
		const secret = "whsec_thisIsTheSecretShownOnce"
		r := idempotency.Request{TenantID: tn.ID, ClientID: "app", UserID: 1, Key: "k", Method: "POST", Path: "/p", Digest: "d"}
		do(t, s, r, func(context.Context) (idempotency.Result, idempotency.Disposition) {
			return idempotency.Result{Status: 201, Body: []byte(`{"secret":"` + secret + `"}`)}, idempotency.Commit
		})
		var bodies []string
		if err := d.Table("idempotency_keys").Pluck("body", &bodies).Error; err != nil {
			t.Fatal(err)
		}
		if len(bodies) != 1 || strings.Contains(bodies[0], secret) || strings.Contains(bodies[0], "whsec_") {
			t.Fatalf("stored bodies %q", bodies)
		}
		other := r
		other.UserID = 2
		do(t, s, other, func(context.Context) (idempotency.Result, idempotency.Disposition) {
			return idempotency.Result{Status: 201, Body: []byte(`{}`)}, idempotency.Commit
		})
		if err := d.Exec("UPDATE idempotency_keys SET body = ? WHERE user_id = 2", bodies[0]).Error; err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Do(context.Background(), other, nil); err == nil {
			t.Fatal("a sealed body moved to another key opened")
		}
	})
}
