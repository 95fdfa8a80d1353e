package outbox_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// The events list reads its page from the newest end of an index on
// PostgreSQL, whatever the number of events: no sort, no count, with and
// without a type and a cursor (the statements ListEvents sends, explained).
func TestListEventsPlan(t *testing.T) {
	d := testdb.Postgres(t)
	f := newFixture(t, d)
	const n = 20000
	rows := make([]map[string]any, 0, n)
	start := time.Now().Add(-time.Hour).UTC()
	kinds := []string{outbox.ActCreated, outbox.ActDuplicated, outbox.ActFetchData, outbox.WebhookTest}
	for i := range n {
		rows = append(rows, map[string]any{
			"tenant_id": tenant.ID(f.ctx), "id": uuid.NewString(), "kind": kinds[i%len(kinds)], "payload": "{}",
			"occurred_at": start.Add(time.Duration(i) * time.Millisecond), "seq": i + 1,
		})
	}
	if err := d.Table("events").CreateInBatches(rows, 1000).Error; err != nil {
		t.Fatal(err)
	}
	if err := d.Exec("ANALYZE events").Error; err != nil {
		t.Fatal(err)
	}
	var sqls []string
	if err := d.DB.Callback().Query().After("gorm:query").Register("test:capture", func(tx *gorm.DB) {
		s := tx.Statement.SQL.String()
		if strings.Contains(s, "ORDER BY seq") {
			sqls = append(sqls, tx.Dialector.Explain(s, tx.Statement.Vars...))
		}
	}); err != nil {
		t.Fatal(err)
	}
	cursor := uuid.MustParse(rows[n/2]["id"].(string))
	member := f.userID
	for _, fl := range []outbox.EventFilter{
		{}, {Kind: outbox.ActCreated}, {After: &cursor}, {Before: &cursor, Kind: outbox.ActFetchData}, {OnlyUser: &member, Limit: 100},
		{Kinds: []string{outbox.ActCreated, outbox.ActFetchData}}, {After: &cursor, Kinds: []string{outbox.ActCreated, outbox.WebhookTest}},
	} {
		sqls = sqls[:0]
		if _, _, err := outbox.ListEvents(f.ctx, d.DB, fl); err != nil {
			t.Fatal(err)
		}
		if len(sqls) != 1 {
			t.Fatalf("%+v: %d list statements", fl, len(sqls))
		}
		var plan []string
		if err := d.Raw("EXPLAIN " + sqls[0]).Scan(&plan).Error; err != nil {
			t.Fatal(err)
		}
		p := strings.Join(plan, "\n")
		if strings.Contains(p, "Sort") || strings.Contains(p, "Seq Scan") || !strings.Contains(p, "events_") {
			t.Errorf("%s\nplan:\n%s", sqls[0], p)
		}
		t.Log(p)
	}
}
