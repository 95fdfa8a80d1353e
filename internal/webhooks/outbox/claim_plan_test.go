package outbox_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// The claim's plan does not depend on the delivered history. With 20,000
// delivered rows beside 2,000 due ones over 20 registrations, and fresh
// statistics, PostgreSQL used to walk the global deliveries_due_idx for
// every registration, filtering out the others' rows (fixed by 00062), and
// each claimed row was inserted into indexes as large as the history (fixed
// by 00090: finished deliveries are in delivery_history). The claim must
// read each registration's due rows through deliveries_claim_idx, scan no
// other index of deliveries (the primary key, for the UPDATE, and the
// in-flight count's index aside), and never read delivery_history. The queue
// table itself may be scanned: for a queue this short the planner finds the
// claimed rows for the UPDATE by a hash join over it, which costs what the
// queue holds, not the history. The scans are read from pg_stat_user_indexes
// on the claiming connection after forcing its statistics out (PostgreSQL
// 15+). On SQLite the same claim must still take a full batch.
func TestClaimPlanIgnoresHistory(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx := t.Context()
		_, tn := testdb.NewTenant(t, d, "acme")
		const hooks, history, due = 20, 20_000, 2_000
		for i := 1; i <= hooks; i++ {
			if err := d.Exec("INSERT INTO webhooks (tenant_id, id, event, target, secret_ciphertext, created_by_user_id) VALUES (?, ?, 'act.created', 'https://h.example.com/', 'x', 1)", tn.ID, i).Error; err != nil {
				t.Fatal(err)
			}
		}
		now := time.Now().UTC().Truncate(time.Second)
		events := make([]map[string]any, 0, history+due)
		deliveries := make([]map[string]any, 0, due)
		finished := make([]map[string]any, 0, history)
		for i := range history + due {
			ev := uuid.New()
			events = append(events, map[string]any{"tenant_id": tn.ID, "id": ev, "kind": "act.created", "payload": "{}", "occurred_at": now.Add(-time.Duration(i) * time.Second)})
			row := map[string]any{"tenant_id": tn.ID, "id": uuid.New(), "webhook_id": 1 + i%hooks, "event_id": ev,
				"status": "succeeded", "attempts": 1, "next_attempt_at": nil, "created_at": now.Add(-time.Duration(i) * time.Second), "updated_at": now.Add(-time.Duration(i) * time.Second)}
			if i >= due {
				finished = append(finished, row)
				continue
			}
			row["status"], row["attempts"], row["next_attempt_at"] = "pending", 0, now.Add(-time.Minute)
			deliveries = append(deliveries, row)
		}
		if err := d.Table("events").CreateInBatches(events, 500).Error; err != nil {
			t.Fatal(err)
		}
		if err := d.Table("deliveries").CreateInBatches(deliveries, 500).Error; err != nil {
			t.Fatal(err)
		}
		if err := d.Table("delivery_history").CreateInBatches(finished, 500).Error; err != nil {
			t.Fatal(err)
		}
		req := outbox.ClaimRequest{Owner: "w", N: 32, EndpointCap: 2, Now: now, LeaseUntil: now.Add(time.Minute)}
		if d.Dialect != db.Postgres {
			rows, err := outbox.Claim(ctx, d, req)
			if err != nil || len(rows) != 32 {
				t.Fatalf("claimed %d rows, %v; want 32", len(rows), err)
			}
			return
		}
		var version int
		if err := d.Raw("SELECT current_setting('server_version_num')::int").Scan(&version).Error; err != nil {
			t.Fatal(err)
		}
		if version < 150000 {
			t.Skip("pg_stat_force_next_flush needs PostgreSQL 15")
		}
		if err := d.Exec("ANALYZE deliveries, delivery_history").Error; err != nil {
			t.Fatal(err)
		}
		type scan struct {
			Name  string
			Scans int64
		}
		// Index scans of deliveries and delivery_history by index, and
		// "(table)" for sequential scans, as this session last flushed them.
		scans := func(tx *gorm.DB) map[string]int64 {
			t.Helper()
			if err := tx.Exec("SELECT pg_stat_force_next_flush()").Error; err != nil {
				t.Fatal(err)
			}
			var rows []scan
			if err := tx.Raw(`SELECT indexrelname AS name, idx_scan AS scans FROM pg_stat_user_indexes WHERE relname IN ('deliveries', 'delivery_history')
				UNION ALL SELECT '(' || relname || ')', seq_scan FROM pg_stat_user_tables WHERE relname IN ('deliveries', 'delivery_history')`).Scan(&rows).Error; err != nil {
				t.Fatal(err)
			}
			m := map[string]int64{}
			for _, r := range rows {
				m[r.Name] = r.Scans
			}
			return m
		}
		err := d.Connection(func(tx *gorm.DB) error {
			one := &db.DB{DB: tx, Dialect: db.Postgres} // every statement on this session
			before := scans(tx)
			rows, err := outbox.Claim(ctx, one, req)
			if err != nil || len(rows) != 32 {
				t.Fatalf("claimed %d rows, %v; want 32", len(rows), err)
			}
			after := scans(tx)
			if n := after["deliveries_claim_idx"] - before["deliveries_claim_idx"]; n < hooks {
				t.Errorf("deliveries_claim_idx scanned %d times; want one per registration (%d)", n, hooks)
			}
			for name, n := range after {
				switch name {
				case "deliveries_claim_idx", "deliveries_pkey", "deliveries_inflight_idx", "(deliveries)":
				default:
					if n != before[name] {
						t.Errorf("the claim scanned %s %d times; want never", name, n-before[name])
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
