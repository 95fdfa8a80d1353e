package retention_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/retention"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// Rows on both sides of the cut-off, in every state: only finished
// deliveries older than the retention go, events only once no delivery is
// left, fetch requests once expired for longer than the retention; pending
// deliveries (however old), their events and act history stay. Batches of 2
// make the loop take several rounds.
func TestPurgeKeepsWhatIsYoung(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		_, tn := testdb.NewTenant(t, d, "acme")
		now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
		old, young := now.Add(-31*24*time.Hour), now.Add(-time.Hour)
		exec := func(sql string, args ...any) {
			t.Helper()
			if err := d.Exec(sql, args...).Error; err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}
		exec("INSERT INTO webhooks (tenant_id, id, event, target, secret_ciphertext, created_by_user_id) VALUES (?, 1, 'act.created', 'https://h.example.com/', 'x', 1), (?, 2, 'act.created', 'https://i.example.com/', 'x', 1)", tn.ID, tn.ID)
		type dl struct {
			status  string
			updated time.Time
			webhook int64
		}
		events := map[string][]dl{
			"old-done":      {{"succeeded", old, 1}, {"failed", old, 2}},      // both go, then the event
			"old-cancelled": {{"cancelled", old, 1}},                          // goes, then the event
			"old-pending":   {{"pending", old, 1}, {"succeeded", old, 2}},     // pending stays: event stays
			"old-inflight":  {{"delivering", old, 1}},                         // stays
			"young-done":    {{"succeeded", young, 1}},                        // stays
			"old-mixed":     {{"succeeded", old, 1}, {"succeeded", young, 2}}, // young delivery keeps the event
		}
		ids := map[string]uuid.UUID{}
		for name, ds := range events {
			id := uuid.New()
			ids[name] = id
			exec("INSERT INTO events (tenant_id, id, kind, payload, occurred_at) VALUES (?, ?, 'act.created', '{}', ?)", tn.ID, id, old)
			for _, x := range ds {
				table := "deliveries" // the live queue; finished rows are the history
				if outbox.Status(x.status).Final() {
					table = "delivery_history"
				}
				exec("INSERT INTO "+table+" (tenant_id, id, webhook_id, event_id, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
					tn.ID, uuid.New(), x.webhook, id, x.status, old, x.updated)
			}
		}
		bare := uuid.New() // an old event that never had a delivery
		exec("INSERT INTO events (tenant_id, id, kind, payload, occurred_at) VALUES (?, ?, 'act.created', '{}', ?)", tn.ID, bare, old)
		youngBare := uuid.New()
		exec("INSERT INTO events (tenant_id, id, kind, payload, occurred_at) VALUES (?, ?, 'act.created', '{}', ?)", tn.ID, youngBare, young)

		// Fetch requests: need an act; history of the act must survive.
		exec("INSERT INTO clients (tenant_id, id, company_name, org_number, country, credit_limit) VALUES (?, 1, 'C', '1', 'SE', 0)", tn.ID)
		exec("INSERT INTO templates (tenant_id, id, family_id, version, name) VALUES (?, 1, 1, 1, 'T')", tn.ID)
		act := uuid.New()
		exec("INSERT INTO acts (tenant_id, uuid, client_id, template_id, title, seq) VALUES (?, ?, 1, 1, 'A', 1)", tn.ID, act)
		exec("INSERT INTO act_history (tenant_id, id, act_uuid, at, actor_type, actor_id, kind) VALUES (?, 1, ?, ?, 'user', '1', 'act_created')", tn.ID, act, old)
		for i, exp := range []time.Time{old, old.Add(time.Minute), young, now.Add(time.Hour)} {
			exec("INSERT INTO fetch_requests (tenant_id, id, act_uuid, requested_by_user_id, requested_at, expires_at) VALUES (?, ?, ?, 1, ?, ?)",
				tn.ID, uuid.New(), act, exp.Add(-30*time.Minute), exp)
			_ = i
		}

		p := retention.New(d, 30*24*time.Hour, testdb.Logger())
		p.Now = func() time.Time { return now }
		p.Batch = 2
		st, err := p.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Deliveries != 5 || st.Events != 3 || st.FetchRequests != 2 {
			t.Fatalf("purged %+v; want 5 deliveries, 3 events, 2 fetch requests", st)
		}
		has := func(table string, id uuid.UUID) bool {
			var n int64
			d.Table(table).Where("tenant_id = ? AND id = ?", tn.ID, id).Count(&n)
			return n == 1
		}
		for name, keep := range map[string]bool{"old-done": false, "old-cancelled": false, "old-pending": true, "old-inflight": true, "young-done": true, "old-mixed": true} {
			if has("events", ids[name]) != keep {
				t.Errorf("event %s kept = %v, want %v", name, !keep, keep)
			}
		}
		if has("events", bare) || !has("events", youngBare) {
			t.Error("events without deliveries: the old one must go, the young one stay")
		}
		var live, history, requests int64
		d.Table("deliveries").Where("status IN ('pending', 'delivering')").Count(&live)
		d.Table("act_history").Count(&history)
		d.Table("fetch_requests").Count(&requests)
		if live != 2 || history != 1 || requests != 2 {
			t.Fatalf("live deliveries %d (want 2), act history %d (want 1), fetch requests %d (want 2)", live, history, requests)
		}
		// Idempotent: a second run (another replica's) finds nothing.
		if st, err := p.RunOnce(ctx); err != nil || st.Total() != 0 {
			t.Fatalf("second run: %+v, %v", st, err)
		}
	})
}

// A run that deletes at least AnalyzeAfter rows of deliveries (or events)
// refreshes their planner statistics on PostgreSQL; a smaller one leaves it
// to autovacuum. analyze_count counts only manual ANALYZEs (autovacuum's go
// to autoanalyze_count), so the test does not depend on autovacuum's timing.
// SQLite is left without statistics.
func TestLargePurgeAnalyzes(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		_, tn := testdb.NewTenant(t, d, "acme")
		now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
		old := now.Add(-31 * 24 * time.Hour)
		exec := func(sql string, args ...any) {
			t.Helper()
			if err := d.Exec(sql, args...).Error; err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}
		exec("INSERT INTO webhooks (tenant_id, id, event, target, secret_ciphertext, created_by_user_id) VALUES (?, 1, 'act.created', 'https://h.example.com/', 'x', 1)", tn.ID)
		seed := func(n int) {
			for range n {
				ev := uuid.New()
				exec("INSERT INTO events (tenant_id, id, kind, payload, occurred_at) VALUES (?, ?, 'act.created', '{}', ?)", tn.ID, ev, old)
				exec("INSERT INTO delivery_history (tenant_id, id, webhook_id, event_id, status, created_at, updated_at) VALUES (?, ?, 1, ?, 'succeeded', ?, ?)",
					tn.ID, uuid.New(), ev, old, old)
			}
		}
		analyzed := func(table string) int64 {
			t.Helper()
			var n int64
			if d.Dialect != db.Postgres {
				return 0
			}
			if err := d.Raw("SELECT analyze_count FROM pg_stat_user_tables WHERE relname = ?", table).Scan(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		p := retention.New(d, 30*24*time.Hour, testdb.Logger())
		p.Now = func() time.Time { return now }
		p.Batch = 10

		// 30 of each, one short of the threshold: no ANALYZE.
		seed(30)
		p.AnalyzeAfter = 31
		d0, e0 := analyzed("delivery_history"), analyzed("events")
		if st, err := p.RunOnce(ctx); err != nil || st.Deliveries != 30 || st.Events != 30 {
			t.Fatalf("below the threshold: purged %+v, %v; want 30 deliveries and 30 events", st, err)
		}
		if d1, e1 := analyzed("delivery_history"), analyzed("events"); d1 != d0 || e1 != e0 {
			t.Fatalf("below the threshold: deliveries analyzed %d times (was %d), events %d (was %d); want no ANALYZE", d1, d0, e1, e0)
		}

		// 30 again, now exactly the threshold: both tables analyzed once.
		seed(30)
		p.AnalyzeAfter = 30
		if st, err := p.RunOnce(ctx); err != nil || st.Deliveries != 30 || st.Events != 30 {
			t.Fatalf("at the threshold: purged %+v, %v; want 30 deliveries and 30 events", st, err)
		}
		want := int64(0)
		if d.Dialect == db.Postgres {
			want = 1
		}
		if d1, e1 := analyzed("delivery_history"), analyzed("events"); d1 != d0+want || e1 != e0+want {
			t.Fatalf("at the threshold: deliveries analyzed %d times (was %d), events %d (was %d); want %d more each", d1, d0, e1, e0, want)
		}
		if d.Dialect == db.SQLite {
			// Open may have analyzed other tables (db.Optimize); the
			// purge analyzes neither of its own.
			var n int64
			if err := d.Raw("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'").Scan(&n).Error; err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				if err := d.Raw("SELECT count(*) FROM sqlite_stat1 WHERE tbl IN ('delivery_history', 'events')").Scan(&n).Error; err != nil || n != 0 {
					t.Fatalf("SQLite: %d sqlite_stat1 rows of the purged tables (%v); want none, the purge must not ANALYZE", n, err)
				}
			}
		}
	})
}

// Events and audit records past their retention go in bounded batches:
// each purge statement deletes at most Batch rows (10, 10, 5 of 25), and
// the run takes as many batches as the rows need, however many there are,
// leaving the young ones.
func TestEventsAndAuditRecordsPurgeInBoundedBatches(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		_, tn := testdb.NewTenant(t, d, "acme")
		now := time.Now().UTC().Truncate(time.Second)
		oldEvent, oldRecord, young := now.Add(-31*24*time.Hour), now.Add(-400*24*time.Hour), now.Add(-time.Hour)
		for i := range 27 {
			at, rec := oldEvent, oldRecord
			if i >= 25 {
				at, rec = young, young
			}
			if err := d.Exec("INSERT INTO events (tenant_id, id, kind, payload, occurred_at, seq) VALUES (?, ?, 'client.created', '{}', ?, ?)",
				tn.ID, uuid.New(), at, i+1).Error; err != nil {
				t.Fatal(err)
			}
			if err := d.Exec("INSERT INTO audit_log (tenant_id, id, occurred_at, actor_type, action, outcome) VALUES (?, ?, ?, 'system', 'webhook.disabled', 'success')",
				tn.ID, i+1, rec).Error; err != nil {
				t.Fatal(err)
			}
		}
		var got []int64
		for range 3 {
			n, err := outbox.PurgeEvents(ctx, d, now.Add(-30*24*time.Hour), 10)
			if err != nil {
				t.Fatal(err)
			}
			m, err := audit.Purge(ctx, d, now.Add(-365*24*time.Hour), 10)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, n, m)
		}
		if want := []int64{10, 10, 10, 10, 5, 5}; !slices.Equal(got, want) {
			t.Fatalf("events, audit records deleted per batch of 10: %v, want %v", got, want)
		}

		// The purger's run: batch after batch until a short one.
		for i := range 25 {
			if err := d.Exec("INSERT INTO events (tenant_id, id, kind, payload, occurred_at, seq) VALUES (?, ?, 'client.created', '{}', ?, ?)",
				tn.ID, uuid.New(), oldEvent, 100+i).Error; err != nil {
				t.Fatal(err)
			}
			if err := d.Exec("INSERT INTO audit_log (tenant_id, id, occurred_at, actor_type, action, outcome) VALUES (?, ?, ?, 'system', 'webhook.disabled', 'success')",
				tn.ID, 100+i, oldRecord).Error; err != nil {
				t.Fatal(err)
			}
		}
		p := retention.New(d, 30*24*time.Hour, nil)
		p.Batch = 10
		st, err := p.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Events != 25 || st.AuditRecords != 25 {
			t.Fatalf("the run purged %+v, want 25 events and 25 audit records", st)
		}
		var events, records int64
		d.Table("events").Where("tenant_id = ?", tn.ID).Count(&events)
		d.Table("audit_log").Where("tenant_id = ?", tn.ID).Count(&records)
		if events != 2 || records != 2 {
			t.Fatalf("%d events and %d audit records left, want the 2 young ones of each", events, records)
		}
	})
}
