package main

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/counts"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// The scale benchmark's seeding writes the same rows on both dialects:
// clients, a fifth as many acts with scalePoints data points each, counted
// and blocked by the triggers, with id sequences past them and updated_at
// values that read back as the seconds sinceSeeded names. Two growths, as
// the benchmark's sizes follow one another.
func TestSeedScale(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		_, big := testdb.NewTenant(t, d, "big")
		_, small := testdb.NewTenant(t, d, "small")
		if err := seedTemplate(d, big.ID, small.ID); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ have, want int }{{0, 100}, {100, 250}} {
			if err := seedScale(d, big.ID, c.have, c.want); err != nil {
				t.Fatalf("seed %d → %d: %v", c.have, c.want, err)
			}
		}
		count := func(q string, args ...any) int64 {
			t.Helper()
			var n int64
			if err := d.Raw(q, args...).Scan(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := count(`SELECT count(*) FROM clients WHERE tenant_id = ?`, big.ID); n != 250 {
			t.Errorf("%d clients, want 250", n)
		}
		if n := count(`SELECT count(*) FROM acts WHERE tenant_id = ?`, big.ID); n != 50 {
			t.Errorf("%d acts, want 50", n)
		}
		if n := count(`SELECT count(*) FROM data_points WHERE tenant_id = ?`, big.ID); n != 50*scalePoints {
			t.Errorf("%d data points, want %d", n, 50*scalePoints)
		}
		if n := count(`SELECT count(*) FROM (SELECT act_uuid FROM data_points WHERE tenant_id = ? GROUP BY act_uuid HAVING count(*) = ?) x`, big.ID, scalePoints); n != 50 {
			t.Errorf("%d acts with %d data points, want 50", n, scalePoints)
		}
		// The seed skips PostgreSQL's foreign key checks of data points
		// (seedScale): every one must still have its act.
		if n := count(`SELECT count(*) FROM data_points p WHERE p.tenant_id = ? AND NOT EXISTS (SELECT 1 FROM acts a WHERE a.tenant_id = p.tenant_id AND a.uuid = p.act_uuid)`, big.ID); n != 0 {
			t.Errorf("%d data points without their act", n)
		}
		if n := count(`SELECT count(*) FROM acts WHERE tenant_id = ? AND status = 'final'`, big.ID); n != 12 {
			t.Errorf("%d final acts, want 12 (a quarter)", n)
		}
		ms, err := counts.Check(ctx, d.DB)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			t.Errorf("count mismatch: %s", m)
		}
		// The API's next ids come after the seeded rows.
		for _, s := range []struct {
			name string
			max  string
		}{
			{"clients", `SELECT max(id) FROM clients WHERE tenant_id = ?`},
			{"data_points", `SELECT max(id) FROM data_points WHERE tenant_id = ?`},
			{"template_fields", `SELECT max(id) FROM template_fields WHERE tenant_id = ?`},
		} {
			if next, max := count(`SELECT next_id FROM id_sequences WHERE tenant_id = ? AND name = ?`, big.ID, s.name), count(s.max, big.ID); next != max+1 {
				t.Errorf("id sequence %s: next %d, want %d", s.name, next, max+1)
			}
		}
		// Act uuids are version-4 uuids (the API validates its path
		// parameters), distinct.
		var uuids []string
		if err := d.Raw(`SELECT uuid FROM acts WHERE tenant_id = ?`, big.ID).Scan(&uuids).Error; err != nil {
			t.Fatal(err)
		}
		v4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
		seen := map[string]bool{}
		for _, u := range uuids {
			if !v4.MatchString(u) || seen[u] {
				t.Errorf("act uuid %q: not a distinct version-4 uuid", u)
			}
			seen[u] = true
		}
		// updated_at reads back as sinceSeeded's time, and compares with a
		// time parameter as the API's updated_since does.
		var at time.Time
		if err := d.Raw(`SELECT updated_at FROM clients WHERE tenant_id = ? AND id = 200`, big.ID).Scan(&at).Error; err != nil {
			t.Fatal(err)
		}
		if want, _ := time.Parse(time.RFC3339, sinceSeeded(200)); !at.Equal(want) {
			t.Errorf("client 200 updated_at %s, want %s", at, want)
		}
		since, _ := time.Parse(time.RFC3339, sinceSeeded(200))
		if n := count(`SELECT count(*) FROM clients WHERE tenant_id = ? AND updated_at > ?`, big.ID, since); n != 50 {
			t.Errorf("%d clients updated after client 200, want 50", n)
		}
	})
}

// The events and audit log seeding (-only events) writes the same rows on
// both dialects, after the rows already there: numbered as the service
// numbers them, with the sequences past them, distinct version-4 event
// ids, one kind, action and actor in 8, 20 and 50, and times that the
// lists' filters compare as the API's parameters.
func TestSeedEventsAndAudit(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, tn := testdb.NewTenant(t, d, "big")
		start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		const evOff, auOff = 3, 5
		for _, c := range []struct{ have, want int }{{0, 40}, {40, 160}} {
			if err := seedEventsAndAudit(d, tn.ID, start, evOff, auOff, c.have, c.want); err != nil {
				t.Fatalf("seed %d → %d: %v", c.have, c.want, err)
			}
		}
		count := func(q string, args ...any) int64 {
			t.Helper()
			var n int64
			if err := d.Raw(q, args...).Scan(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		for _, c := range []struct{ q, seq string }{
			{`SELECT count(DISTINCT seq) FROM events WHERE tenant_id = ? AND seq BETWEEN 4 AND 163`, "events.seq"},
			{`SELECT count(DISTINCT id) FROM audit_log WHERE tenant_id = ? AND id BETWEEN 6 AND 165`, "audit_log"},
		} {
			if n := count(c.q, tn.ID); n != 160 {
				t.Errorf("%s: %d rows numbered after the offset, want 160", c.seq, n)
			}
			next := count(`SELECT next_id FROM id_sequences WHERE tenant_id = ? AND name = ?`, tn.ID, c.seq)
			if want := map[string]int64{"events.seq": evOff + 161, "audit_log": auOff + 161}[c.seq]; next != want {
				t.Errorf("%s: next id %d, want %d", c.seq, next, want)
			}
		}
		var ids []string
		if err := d.Raw(`SELECT id FROM events WHERE tenant_id = ?`, tn.ID).Scan(&ids).Error; err != nil {
			t.Fatal(err)
		}
		v4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
		seen := map[string]bool{}
		for _, id := range ids {
			if !v4.MatchString(id) || seen[id] {
				t.Errorf("event id %q: not a distinct version-4 uuid", id)
			}
			seen[id] = true
		}
		// Through the stores the API lists with.
		evs, _, err := outbox.ListEvents(ctx, d.DB, outbox.EventFilter{Kind: scaleEventKinds[1], Limit: 100})
		if err != nil || len(evs) != 20 {
			t.Fatalf("events of kind %s: %d, %v; want 20", scaleEventKinds[1], len(evs), err)
		}
		until := start.Add(100 * time.Second) // events and records 1…99
		evs, _, err = outbox.ListEvents(ctx, d.DB, outbox.EventFilter{Until: &until, Limit: 200})
		if err != nil || len(evs) != 99 || evs[0].Seq != evOff+99 {
			t.Fatalf("events before g = 100: %d, %v; want 99, the newest numbered %d", len(evs), err, evOff+99)
		}
		recs, _, err := audit.List(ctx, d.DB, audit.Filter{Action: scaleAuditActions[2], Limit: 100})
		if err != nil || len(recs) != 8 {
			t.Fatalf("records of action %s: %d, %v; want 8", scaleAuditActions[2], len(recs), err)
		}
		user := int64(7)
		recs, _, err = audit.List(ctx, d.DB, audit.Filter{ActorUserID: &user, Until: &until, Limit: 100})
		if err != nil || len(recs) != 2 || recs[0].ID != auOff+56 {
			t.Fatalf("records of user 7 before g = 100: %+v, %v; want g = 56 and 6", recs, err)
		}
	})
}
