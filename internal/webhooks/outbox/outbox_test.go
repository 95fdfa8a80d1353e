package outbox_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// fixture is one tenant with one user.
type fixture struct {
	t      testing.TB
	d      *db.DB
	ctx    context.Context
	userID int64
}

func newFixture(t testing.TB, d *db.DB) *fixture {
	t.Helper()
	ctx, tn := testdb.NewTenant(t, d, "acme")
	f := &fixture{t: t, d: d, ctx: ctx}
	f.userID = f.nextID("users")
	if err := d.Table("users").Create(map[string]any{"tenant_id": tn.ID, "id": f.userID, "email": "m@acme", "name": "M", "role": "member", "password_hash": "!"}).Error; err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) nextID(table string) int64 {
	f.t.Helper()
	id, err := db.NextID(f.d.DB, tenant.ID(f.ctx), table)
	if err != nil {
		f.t.Fatal(err)
	}
	return id
}

// webhook inserts a registration row directly (the registry validates
// targets; these rows are what it may hold after later changes).
func (f *fixture) webhook(event, target string, active bool, userID int64) int64 {
	f.t.Helper()
	id := f.nextID("webhooks")
	row := map[string]any{
		"tenant_id": tenant.ID(f.ctx), "id": id, "event": event, "target": target, "active": active,
		"secret_ciphertext": "test-ciphertext", "created_by_user_id": userID,
	}
	if err := f.d.Table("webhooks").Create(row).Error; err != nil {
		f.t.Fatal(err)
	}
	return id
}

func (f *fixture) emit(ob *outbox.Outbox, kind string) (queued int, eventID string) {
	f.t.Helper()
	id := uuid.New()
	err := f.d.Tx(f.ctx, func(tx *gorm.DB) error {
		var err error
		queued, err = ob.Emit(f.ctx, tx, outbox.Event{ID: id, Kind: kind, Data: map[string]any{"n": 1}})
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return queued, id.String()
}

func (f *fixture) deliveries(eventID string) (webhooks []int64) {
	f.t.Helper()
	if err := f.d.Table("delivery_log").Where("tenant_id = ? AND event_id = ?", tenant.ID(f.ctx), eventID).
		Order("webhook_id").Pluck("webhook_id", &webhooks).Error; err != nil {
		f.t.Fatal(err)
	}
	return webhooks
}

// The eligibility rule is written once (Policy.conditions): Emit queues a
// delivery exactly for the registrations whose IneligibleSQL reason, the
// one delivery workers re-check before each attempt, is empty. The rule
// reads the same on both dialects, including the case of the scheme.
func TestEmitAndWorkersApplyTheSameEligibilityRule(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		kind := outbox.ActCreated
		https := f.webhook(kind, "https://hooks.example.com/a", true, f.userID)
		http := f.webhook(kind, "http://hooks.example.com/b", true, f.userID)
		upper := f.webhook(kind, "HTTPS://hooks.example.com/c", true, f.userID)
		inactive := f.webhook(kind, "https://hooks.example.com/d", false, f.userID)
		orphan := f.webhook(kind, "https://hooks.example.com/e", true, 9999)
		f.webhook(outbox.ActDuplicated, "https://hooks.example.com/f", true, f.userID) // another kind

		for _, allowHTTP := range []bool{false, true} {
			t.Run(fmt.Sprintf("allowHTTP=%v", allowHTTP), func(t *testing.T) {
				p := outbox.Policy{AllowHTTP: allowHTTP}
				var rows []struct {
					ID     int64
					Reason string
				}
				if err := d.Raw("SELECT webhooks.id, "+p.IneligibleSQL()+" AS reason FROM webhooks WHERE tenant_id = ? AND event = ? ORDER BY id",
					tenant.ID(f.ctx), kind).Scan(&rows).Error; err != nil {
					t.Fatal(err)
				}
				reasons := map[int64]string{}
				var eligible []int64
				for _, r := range rows {
					reasons[r.ID] = r.Reason
					if r.Reason == "" {
						eligible = append(eligible, r.ID)
					}
				}
				want := map[int64]string{
					https: "", upper: "target is not https", inactive: "registration is inactive",
					orphan: "the registering user no longer has access", http: "target is not https",
				}
				if allowHTTP {
					want[http] = ""
				}
				for id, w := range want {
					if reasons[id] != w {
						t.Errorf("webhook %d: reason %q, want %q", id, reasons[id], w)
					}
				}

				ob := &outbox.Outbox{Policy: p}
				n, err := ob.EligibleCount(f.ctx, d.DB, kind)
				if err != nil || n != int64(len(eligible)) {
					t.Fatalf("EligibleCount = %d, %v; want %d", n, err, len(eligible))
				}
				queued, ev := f.emit(ob, kind)
				got := f.deliveries(ev)
				if queued != len(eligible) || !slices.Equal(got, eligible) {
					t.Fatalf("Emit queued %d for %v; the rule admits %v", queued, got, eligible)
				}
			})
		}
	})
}

// One helper cancels pending deliveries, for a deactivation (no reason)
// and for a 410 (with one); rows in flight or final are left alone.
func TestCancelPending(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		wh := f.webhook(outbox.ActCreated, "https://hooks.example.com/", true, f.userID)
		other := f.webhook(outbox.ActCreated, "https://hooks.example.com/other", true, f.userID)
		ob := &outbox.Outbox{}
		var evs []string
		for range 3 {
			_, ev := f.emit(ob, outbox.ActCreated)
			evs = append(evs, ev)
		}
		tid := tenant.ID(f.ctx)
		// set brings the delivery of ev to s as the system would: requeued
		// (back from the history when finished), then claimed, then
		// finished (to the history).
		set := func(ev string, s outbox.Status) {
			t.Helper()
			var id string
			if err := d.Table("delivery_log").Where("tenant_id = ? AND event_id = ? AND webhook_id = ?", tid, ev, wh).Pluck("id", &id).Error; err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			if err := d.Tx(f.ctx, func(tx *gorm.DB) error { return outbox.Requeue(tx, tid, wh, id, now) }); err != nil {
				t.Fatal(err)
			}
			upd := map[string]any{"last_error": "earlier"}
			if s != outbox.Pending {
				upd["status"], upd["lease_owner"] = string(outbox.Delivering), "t"
			}
			if err := d.Table("deliveries").Where("tenant_id = ? AND id = ?", tid, id).Updates(upd).Error; err != nil {
				t.Fatal(err)
			}
			if s.Final() {
				if held, err := outbox.Finish(f.ctx, d, outbox.Claimed{TenantID: tid, ID: id}, "t", outbox.Update{Status: s}, now, nil); !held || err != nil {
					t.Fatalf("finish: held %v, %v", held, err)
				}
			}
		}
		set(evs[1], outbox.Delivering)
		set(evs[2], outbox.Succeeded)
		now := time.Now().UTC().Truncate(time.Microsecond)
		for _, reason := range []string{"", "registration disabled: gone"} {
			set(evs[0], outbox.Pending)
			if err := outbox.CancelPending(d.WithContext(f.ctx), tid, wh, reason, now); err != nil {
				t.Fatal(err)
			}
			var rows []struct {
				EventID       string
				WebhookID     int64
				Status        outbox.Status
				LastError     *string
				NextAttemptAt *time.Time
			}
			d.Table("delivery_log").Where("tenant_id = ?", tid).Scan(&rows)
			for _, r := range rows {
				want := outbox.Pending
				switch {
				case r.WebhookID == other:
				case r.EventID == evs[0]:
					want = outbox.Cancelled
					wantErr := "earlier"
					if reason != "" {
						wantErr = reason
					}
					if r.LastError == nil || *r.LastError != wantErr || r.NextAttemptAt != nil {
						t.Errorf("cancelled row: last_error %v next %v, want %q and none", r.LastError, r.NextAttemptAt, wantErr)
					}
				case r.EventID == evs[1]:
					want = outbox.Delivering
				case r.EventID == evs[2]:
					want = outbox.Succeeded
				}
				if r.Status != want {
					t.Errorf("webhook %d event %s: status %s, want %s", r.WebhookID, r.EventID, r.Status, want)
				}
			}
		}
	})
}

func TestDepth(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.webhook(outbox.ActCreated, "https://a.example.com/", true, f.userID)
		var ids []string
		for range 4 {
			_, ev := f.emit(&outbox.Outbox{}, outbox.ActCreated)
			ids = append(ids, ev)
		}
		d.Table("deliveries").Where("event_id = ?", ids[0]).Update("status", string(outbox.Delivering))
		// A finished delivery (moved to the history) is not in the depth.
		var c outbox.Claimed
		d.Table("deliveries").Where("event_id = ?", ids[1]).Updates(map[string]any{"status": string(outbox.Delivering), "lease_owner": "t"})
		d.Table("deliveries").Where("event_id = ?", ids[1]).Take(&c)
		if held, err := outbox.Finish(context.Background(), d, c, "t", outbox.Update{Status: outbox.Succeeded}, time.Now(), nil); !held || err != nil {
			t.Fatalf("finish: held %v, %v", held, err)
		}
		p, dl, err := outbox.Depth(context.Background(), d)
		if err != nil || p != 2 || dl != 1 {
			t.Fatalf("depth %d+%d, %v", p, dl, err)
		}
	})
}

// EmitAll writes the events of one change in the statements of one: they
// are numbered in the order given, each reaches exactly the eligible
// registrations of its own kind, and the statement count does not grow
// with the number of events.
func TestEmitAllIsOneEmit(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		a := f.webhook(outbox.ActDataUpdated, "https://hooks.example.com/a", true, f.userID)
		b := f.webhook(outbox.FetchRequestCompleted, "https://hooks.example.com/b", true, f.userID)
		both := f.webhook(outbox.ActDataUpdated, "https://hooks.example.com/c", true, f.userID)
		f.webhook(outbox.FetchRequestCompleted, "https://hooks.example.com/d", false, f.userID) // inactive
		f.webhook(outbox.ActCreated, "https://hooks.example.com/e", true, f.userID)             // another kind

		counted, count := d.CountQueries()
		ob := &outbox.Outbox{}
		statements := map[int]int{}
		for _, n := range []int{1, 2, 3} {
			var evs []outbox.Event
			for i := range n {
				kind := outbox.ActDataUpdated
				if i%2 == 1 {
					kind = outbox.FetchRequestCompleted
				}
				evs = append(evs, outbox.Event{ID: uuid.New(), Kind: kind, Data: map[string]any{"i": i}})
			}
			before := count()
			var queued int
			if err := counted.Tx(f.ctx, func(tx *gorm.DB) error {
				var err error
				queued, err = ob.EmitAll(f.ctx, tx, evs...)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			statements[n] = count() - before
			want := 0
			var seqs []int64
			for _, ev := range evs {
				got := f.deliveries(ev.ID.String())
				w := []int64{a, both}
				if ev.Kind == outbox.FetchRequestCompleted {
					w = []int64{b}
				}
				if !slices.Equal(got, w) {
					t.Errorf("%d events: %s delivered to %v, want %v", n, ev.Kind, got, w)
				}
				want += len(w)
				var seq int64
				if err := d.Table("events").Where("tenant_id = ? AND id = ?", tenant.ID(f.ctx), ev.ID.String()).Pluck("seq", &seq).Error; err != nil {
					t.Fatal(err)
				}
				seqs = append(seqs, seq)
			}
			if queued != want {
				t.Errorf("%d events: %d queued, want %d", n, queued, want)
			}
			for i := 1; i < len(seqs); i++ {
				if seqs[i] != seqs[i-1]+1 {
					t.Errorf("%d events numbered %v, want consecutive in the order given", n, seqs)
				}
			}
		}
		if statements[1] != statements[3] || statements[2] != statements[3] {
			t.Errorf("statements per EmitAll of 1, 2, 3 events: %v; want the same", statements)
		}
		// EmitAll of nothing writes nothing.
		before := count()
		if n, err := ob.EmitAll(f.ctx, counted.DB); n != 0 || err != nil || count() != before {
			t.Errorf("EmitAll of no event: %d, %v, %d statements", n, err, count()-before)
		}
	})
}
