package outbox_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// queue writes n pending deliveries for the registration, due at at, at+1ms,
// … (the oldest first), each with its own event.
func (f *fixture) queue(webhookID int64, n int, at time.Time) {
	f.t.Helper()
	tid := tenant.ID(f.ctx)
	events := make([]map[string]any, n)
	rows := make([]map[string]any, n)
	for i := range rows {
		eid := uuid.NewString()
		due := at.Add(time.Duration(i) * time.Millisecond).UTC()
		events[i] = map[string]any{"tenant_id": tid, "id": eid, "kind": outbox.ActCreated, "payload": "{}", "occurred_at": due}
		rows[i] = map[string]any{"tenant_id": tid, "id": uuid.NewString(), "webhook_id": webhookID, "event_id": eid,
			"status": string(outbox.Pending), "attempts": 0, "next_attempt_at": due, "created_at": due, "updated_at": due}
	}
	if err := f.d.Table("events").CreateInBatches(events, 200).Error; err != nil {
		f.t.Fatal(err)
	}
	if err := f.d.Table("deliveries").CreateInBatches(rows, 200).Error; err != nil {
		f.t.Fatal(err)
	}
}

func claim(t *testing.T, d *db.DB, owner string, n, limit int, now time.Time) []outbox.Claimed {
	t.Helper()
	rows, err := outbox.Claim(context.Background(), d, outbox.ClaimRequest{Owner: owner, N: n, EndpointCap: limit, Now: now, LeaseUntil: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func perWebhook(rows []outbox.Claimed) map[int64]int {
	m := map[int64]int{}
	for _, r := range rows {
		m[r.WebhookID]++
	}
	return m
}

// A registration with a backlog gets at most its cap, counting what it
// already has in flight, and never holds back another registration's single
// due delivery, however much newer.
func TestClaimCapsEachRegistrationAndServesOthers(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		slow := f.webhook(outbox.ActCreated, "https://slow.example/h", true, f.userID)
		fast := f.webhook(outbox.ActCreated, "https://fast.example/h", true, f.userID)
		now := time.Now().UTC().Truncate(time.Second)
		f.queue(slow, 1000, now.Add(-time.Hour))
		f.queue(fast, 1, now.Add(-time.Second))

		got := perWebhook(claim(t, d, "a", 10, 2, now))
		if got[slow] != 2 || got[fast] != 1 {
			t.Fatalf("first claim took %v; want 2 of the backlog (its cap) and the other registration's 1", got)
		}
		// The backlog's two leases are live: another replica gets nothing of it.
		if got := claim(t, d, "b", 10, 2, now); len(got) != 0 {
			t.Fatalf("second claim took %v while the registration is at its cap", perWebhook(got))
		}
		// With a cap of 3, exactly one more slot is free.
		if got := perWebhook(claim(t, d, "b", 10, 3, now)); got[slow] != 1 || len(got) != 1 {
			t.Fatalf("claim with cap 3 took %v; want 1 of the backlog", got)
		}
		// Once the leases have expired the rows count as due again, not as
		// in flight.
		later := now.Add(2 * time.Minute)
		if got := perWebhook(claim(t, d, "c", 10, 2, later)); got[slow] != 2 {
			t.Fatalf("claim after the leases expired took %v; want 2 of the backlog", got)
		}
	})
}

// Claims go round-robin: every tenant's first row before any tenant's
// second, and within a tenant every registration's first before any
// registration's second, whatever the due times.
func TestClaimIsRoundRobinAcrossTenantsAndRegistrations(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		big := newFixture(t, d)
		now := time.Now().UTC().Truncate(time.Second)
		var bigHooks []int64
		for i := range 4 {
			h := big.webhook(outbox.ActCreated, fmt.Sprintf("https://b%d.example/h", i), true, big.userID)
			big.queue(h, 20, now.Add(-time.Hour))
			bigHooks = append(bigHooks, h)
		}
		ctx2, _ := testdb.NewTenant(t, d, "small")
		small := &fixture{t: t, d: d, ctx: ctx2}
		small.userID = small.nextID("users")
		if err := d.Table("users").Create(map[string]any{"tenant_id": tenant.ID(ctx2), "id": small.userID, "email": "s@small", "name": "S", "role": "member", "password_hash": "!"}).Error; err != nil {
			t.Fatal(err)
		}
		sh := small.webhook(outbox.ActCreated, "https://small.example/h", true, small.userID)
		small.queue(sh, 1, now.Add(-time.Second))

		rows := claim(t, d, "a", 2, 10, now)
		tenants := map[int64]int{}
		for _, r := range rows {
			tenants[r.TenantID]++
		}
		if len(rows) != 2 || tenants[tenant.ID(ctx2)] != 1 {
			t.Fatalf("2 slots went to %v; want one to each tenant", tenants)
		}
		// The next three slots go to the big tenant's three registrations
		// that have nothing in flight, not to the one that has.
		var first int64
		for _, r := range rows {
			if r.TenantID != tenant.ID(ctx2) {
				first = r.WebhookID
			}
		}
		got := perWebhook(claim(t, d, "a", 3, 10, now))
		for _, h := range bigHooks {
			want := 1
			if h == first {
				want = 0
			}
			if got[h] != want {
				t.Fatalf("3 slots went to %v after %d had one in flight; want one to each of the others", got, first)
			}
		}
	})
}

// Replicas claiming at once never exceed a registration's cap: the claim
// counts the leased rows in the same statement (serialized on PostgreSQL).
// Each claimer's in-memory count is dropped before its row is finished, so
// the sum can only undercount what the database holds.
func TestClaimCapHoldsAcrossConcurrentClaimers(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		h := f.webhook(outbox.ActCreated, "https://one.example/h", true, f.userID)
		const total, limit = 120, 2
		f.queue(h, total, time.Now().Add(-time.Hour))
		var inflight, worst, done atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				owner := fmt.Sprintf("r%d", i)
				for done.Load() < total {
					now := time.Now()
					rows, err := outbox.Claim(context.Background(), d, outbox.ClaimRequest{Owner: owner, N: 4, EndpointCap: limit, Now: now, LeaseUntil: now.Add(time.Minute)})
					if err != nil {
						errs <- err
						return
					}
					n := inflight.Add(int64(len(rows)))
					for {
						w := worst.Load()
						if n <= w || worst.CompareAndSwap(w, n) {
							break
						}
					}
					for _, c := range rows {
						inflight.Add(-1)
						now := time.Now()
						if _, err := outbox.Finish(context.Background(), d, c, owner, outbox.Update{Status: outbox.Succeeded}, now, nil); err != nil {
							errs <- err
							return
						}
						done.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if w := worst.Load(); w > limit {
			t.Fatalf("%d attempts of one registration were in flight at once; the cap is %d", w, limit)
		}
		if w := worst.Load(); w < limit {
			t.Fatalf("never more than %d in flight: the claimers did not race", w)
		}
		var ok int64
		d.Table("delivery_log").Where("status = ?", string(outbox.Succeeded)).Count(&ok)
		if ok != total {
			t.Fatalf("%d of %d deliveries finished", ok, total)
		}
	})
}

func TestBreakerPauseDoublesUpToTheMax(t *testing.T) {
	want := map[int]time.Duration{0: 0, outbox.TripAfter - 1: 0, outbox.TripAfter: outbox.BreakerBase,
		outbox.TripAfter + 1: 2 * outbox.BreakerBase, outbox.TripAfter + 2: 4 * outbox.BreakerBase, 1000: outbox.BreakerMax}
	for n, w := range want {
		if got := outbox.BreakerPause(n); got != w {
			t.Errorf("BreakerPause(%d) = %s, want %s", n, got, w)
		}
	}
}
