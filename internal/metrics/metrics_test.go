package metrics

import (
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/delivery"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

func TestDeliveryOutcomeConcurrent(t *testing.T) {
	retry := string(delivery.Retrying)
	before := testutil.ToFloat64(deliveries.WithLabelValues(retry))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				DeliveryOutcome(delivery.Result{Outcome: delivery.Retrying})
				DeliveryOutcome(delivery.Result{Outcome: delivery.Released})
			}
		}()
	}
	wg.Wait()
	if d := testutil.ToFloat64(deliveries.WithLabelValues(retry)) - before; d != 800 {
		t.Fatalf("retry deliveries +%v, want +800", d)
	}
	// Every Metrics exposes the shared counters, one series per counted
	// outcome (a released lease, reported above, is not one).
	m1, m2 := New(nil), New(nil)
	for _, m := range []*Metrics{m1, m2} {
		if n, err := testutil.GatherAndCount(m.Registry(), "finsvc_webhook_deliveries_total"); err != nil || n != 5 {
			t.Fatalf("deliveries series = %d, %v; want the 5 outcomes", n, err)
		}
	}
}

func TestOutboxDepth(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		_, tn := testdb.NewTenant(t, d, "acme")
		_, other := testdb.NewTenant(t, d, "beta")
		insert := func(tenantID int64, statuses ...string) {
			t.Helper()
			var wid int64 = 1
			if err := d.Exec(`INSERT INTO webhooks (tenant_id, id, event, target, secret_ciphertext, created_by_user_id)
				SELECT ?, ?, 'act.created', 'https://example.com/h', 'x', 1
				WHERE NOT EXISTS (SELECT 1 FROM webhooks WHERE tenant_id = ? AND id = ?)`, tenantID, wid, tenantID, wid).Error; err != nil {
				t.Fatal(err)
			}
			for _, st := range statuses {
				ev := uuid.NewString()
				if err := d.Exec(`INSERT INTO events (tenant_id, id, kind, payload, occurred_at) VALUES (?, ?, 'act.created', '{}', ?)`,
					tenantID, ev, time.Now()).Error; err != nil {
					t.Fatal(err)
				}
				table := "deliveries" // the live queue; finished rows are the history
				if outbox.Status(st).Final() {
					table = "delivery_history"
				}
				if err := d.Exec(`INSERT INTO `+table+` (tenant_id, id, webhook_id, event_id, status) VALUES (?, ?, ?, ?, ?)`,
					tenantID, uuid.NewString(), wid, ev, st).Error; err != nil {
					t.Fatal(err)
				}
			}
		}
		insert(tn.ID, "pending", "delivering", "succeeded", "failed", "cancelled")
		insert(other.ID, "pending") // across tenants

		o := newOutboxDepth(d, 5*time.Second)
		now := time.Now()
		o.nowFunc = func() time.Time { return now }
		if v, ok := o.depth(); !ok || v != 3 {
			t.Fatalf("depth = %v, %v; want 3 (pending + delivering, both tenants)", v, ok)
		}
		insert(tn.ID, "pending")
		if v, _ := o.depth(); v != 3 {
			t.Fatalf("depth = %v within the cache ttl, want the cached 3", v)
		}
		now = now.Add(5 * time.Second)
		if v, _ := o.depth(); v != 4 {
			t.Fatalf("depth = %v after the ttl, want 4", v)
		}
		if n, err := testutil.GatherAndCount(newRegistryWith(o), "finsvc_outbox_depth"); err != nil || n != 1 {
			t.Fatalf("gauge series = %d, %v", n, err)
		}
	})
}

func TestOutboxDepthQueryFailureOmitsGauge(t *testing.T) {
	d := testdb.SQLite(t)
	o := newOutboxDepth(d, time.Second)
	if err := d.Exec(`DROP TABLE deliveries`).Error; err != nil {
		t.Fatal(err)
	}
	reg := newRegistryWith(o)
	if n, err := testutil.GatherAndCount(reg, "finsvc_outbox_depth"); err != nil || n != 0 {
		t.Fatalf("gauge series = %d, %v; want none when the query fails", n, err)
	}
	if v := testutil.ToFloat64(o.errs); v != 1 {
		t.Fatalf("query errors = %v, want 1", v)
	}
}

func newRegistryWith(o *outboxDepth) *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(o)
	return r
}
