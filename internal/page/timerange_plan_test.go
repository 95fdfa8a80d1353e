package page_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// planNode is the part of EXPLAIN (ANALYZE, FORMAT JSON) the test reads.
type planNode struct {
	NodeType    string     `json:"Node Type"`
	Relation    string     `json:"Relation Name"`
	Index       string     `json:"Index Name"`
	ActualRows  float64    `json:"Actual Rows"`
	ActualLoops float64    `json:"Actual Loops"`
	Removed     float64    `json:"Rows Removed by Filter"`
	Plans       []planNode `json:"Plans"`
}

// read is how many rows of table the plan's nodes produced or filtered
// out, and whether it sorted or scanned table sequentially.
func (n planNode) read(table string) (rows float64, sorted, seq bool) {
	if n.Relation == table {
		rows = (n.ActualRows + n.Removed) * max(n.ActualLoops, 1)
		seq = n.NodeType == "Seq Scan"
	}
	sorted = strings.Contains(n.NodeType, "Sort")
	for _, c := range n.Plans {
		r, s, q := c.read(table)
		rows, sorted, seq = rows+r, sorted || s, seq || q
	}
	return rows, sorted, seq
}

// A time-bounded page of the events or the audit log reads, at 200,000
// rows each, about a block (1,024 numbers) of index entries and rows near
// its bound, not the rows between the newest and the bound: newest first
// with an upper bound 90% back (with and without a type, an action, an
// actor), a window both bounds deep in the past, a lower bound that ends
// the last page early, and the previous pages (ending_before) read
// upwards from a lower bound. No sort, no sequential scan. The times are
// out of the numbers' order by up to a minute, as concurrent writers
// leave them. Each statement is run by EXPLAIN ANALYZE, so a plan or a
// bound that reads back to the newest row fails here.
func TestTimeBoundsReadNearTheBound(t *testing.T) {
	d := testdb.Postgres(t)
	ctx, tn := testdb.NewTenant(t, d, "big")
	testdb.NewTenant(t, d, "small")
	const n = 200_000
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, s := range []string{
		`INSERT INTO events (tenant_id, id, kind, payload, occurred_at, seq)
		 SELECT ?, md5('ev' || g)::uuid, (ARRAY['client.created','client.updated','act.created','act.updated'])[1 + g % 4], '{}',
		        ?::timestamptz + g * interval '1 second' + ((g * 7919) % 121 - 60) * interval '1 second', g
		 FROM generate_series(1, 200000) g`,
		`INSERT INTO audit_log (tenant_id, id, occurred_at, actor_type, actor_user_id, action, outcome)
		 SELECT ?, g, ?::timestamptz + g * interval '1 second' + ((g * 7919) % 121 - 60) * interval '1 second',
		        'user', 1 + g % 50, (ARRAY['auth.sign_in','user.created','user.role_changed','webhook.created'])[1 + g % 4], 'success'
		 FROM generate_series(1, 200000) g`,
	} {
		if err := d.Exec(s, tn.ID, start).Error; err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Exec("VACUUM ANALYZE events, audit_log, time_blocks").Error; err != nil {
		t.Fatal(err)
	}
	var sqls []string
	if err := d.DB.Callback().Query().After("gorm:query").Register("test:capture", func(tx *gorm.DB) {
		if s := tx.Statement.SQL.String(); strings.Contains(s, "time_blocks") {
			sqls = append(sqls, tx.Dialector.Explain(s, tx.Statement.Vars...))
		}
	}); err != nil {
		t.Fatal(err)
	}
	at := func(g int) *time.Time { x := start.Add(time.Duration(g) * time.Second); return &x }
	back90, back89, back1 := at(n/10), at(n/10+1000), at(n-60)
	// A block above the bound, and the page itself; the plan reads a
	// row at most twice (an index scan's rows and those it filtered).
	const most = 2*1024 + 200
	// wantRows < 0: any number (the times near the end are jittered).
	check := func(what, table string, call func() (int, error), wantRows int) {
		t.Helper()
		sqls = sqls[:0]
		got, err := call()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if wantRows >= 0 && got != wantRows {
			t.Errorf("%s: %d rows, want %d", what, got, wantRows)
		}
		if len(sqls) != 1 {
			t.Fatalf("%s: %d bounded statements", what, len(sqls))
		}
		var out string
		if err := d.Raw("EXPLAIN (ANALYZE, FORMAT JSON) " + sqls[0]).Row().Scan(&out); err != nil {
			t.Fatal(err)
		}
		var plans []struct{ Plan planNode }
		if err := json.Unmarshal([]byte(out), &plans); err != nil || len(plans) != 1 {
			t.Fatalf("%s: %v: %s", what, err, out)
		}
		rows, sorted, seq := plans[0].Plan.read(table)
		var text []string
		if err := d.Raw("EXPLAIN " + sqls[0]).Scan(&text).Error; err != nil {
			t.Fatal(err)
		}
		plan := strings.Join(text, "\n")
		if rows > most || seq {
			t.Errorf("%s: read %.0f rows of %s (at most %d), sequential %v:\n%s\n%s", what, rows, table, most, seq, sqls[0], plan)
		}
		t.Logf("%s: %.0f rows of %s read, sorted %v\n%s", what, rows, table, sorted, plan)
	}
	events := func(f outbox.EventFilter) func() (int, error) {
		return func() (int, error) {
			evs, _, err := outbox.ListEvents(ctx, d.DB, f)
			return len(evs), err
		}
	}
	var old uuid.UUID
	if err := d.Raw("SELECT id FROM events WHERE tenant_id = ? AND seq = ?", tn.ID, n/20).Row().Scan(&old); err != nil {
		t.Fatal(err)
	}
	check("events before 90% back", "events", events(outbox.EventFilter{Until: back90}), 25)
	check("events of a type before 90% back", "events", events(outbox.EventFilter{Kind: "client.updated", Until: back90, Limit: 100}), 100)
	check("events in a window 90% back", "events", events(outbox.EventFilter{From: back90, Until: back89, Limit: 100}), 100)
	check("events after the last minute (the last page)", "events", events(outbox.EventFilter{From: back1, Limit: 100}), -1)
	check("events since 90% back, ending before an event 95% back", "events", events(outbox.EventFilter{From: back90, Before: &old}), 25)
	auditRows := func(f audit.Filter) func() (int, error) {
		return func() (int, error) {
			rs, _, err := audit.List(ctx, d.DB, f)
			return len(rs), err
		}
	}
	seven, oldID := int64(7), int64(n/20)
	check("records before 90% back", "audit_log", auditRows(audit.Filter{Until: back90}), 25)
	check("records of an action before 90% back", "audit_log", auditRows(audit.Filter{Action: audit.UserCreated, Until: back90}), 25)
	check("records of an actor before 90% back", "audit_log", auditRows(audit.Filter{ActorUserID: &seven, Until: back90}), 25)
	check("records in a window 90% back", "audit_log", auditRows(audit.Filter{From: back90, Until: back89, Limit: 100}), 100)
	check("records after the last minute (the last page)", "audit_log", auditRows(audit.Filter{From: back1, Limit: 100}), -1)
	check("records since 90% back, ending before a record 95% back", "audit_log", auditRows(audit.Filter{From: back90, Before: &oldID}), 25)
}
