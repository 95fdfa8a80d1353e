package counts_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/acts"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/templates"
)

// The list filters (clients by country, organisation number and name
// prefix; acts by template) at 200,000 clients and 100,000 acts (the
// tenant of TestPlansUseIndexes): every
// query a filtered list sends reads an index, never the listed table
// sequentially, and the filter's own index where the planner has a choice
// worth pinning (organisation number, name prefix, template). Totals of
// single equality filters are list_counts reads; the others count over
// the filter's index. A sync (updated_since) reads and counts the rows
// changed since over the updated_at index.
func filterPlansUseIndexes(t *testing.T, ctx context.Context, d *db.DB) {
	rec := &recorder{ConnPool: d.DB.Statement.ConnPool}
	g := d.DB.Session(&gorm.Session{Context: context.Background()})
	g.Statement.ConnPool = rec
	rd := &db.DB{DB: g, Dialect: d.Dialect}

	explain := func(what string, wantIndex string) {
		t.Helper()
		var all strings.Builder
		for _, q := range rec.take() {
			var lines []string
			if err := d.Raw("EXPLAIN "+q.sql, q.args...).Scan(&lines).Error; err != nil {
				t.Fatalf("%s: EXPLAIN %s: %v", what, q.sql, err)
			}
			plan := strings.Join(lines, "\n")
			for _, tbl := range []string{"clients", "acts", "list_counts"} {
				if strings.Contains(plan, "Seq Scan on "+tbl+" ") || strings.HasSuffix(plan, "Seq Scan on "+tbl) {
					t.Errorf("%s: a sequential scan of %s in\n%s\n%s", what, tbl, q.sql, plan)
				}
			}
			all.WriteString(q.sql + "\n" + plan + "\n")
		}
		if !strings.Contains(all.String(), wantIndex) {
			t.Errorf("%s: plans do not use %s:\n%s", what, wantIndex, all.String())
		}
	}
	sp := func(s string) *string { return &s }
	// The changes of the last 1,000 seconds: 1,000 clients and 1,000 acts.
	recent := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(199000 * time.Second)
	recentActs := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(99000 * time.Second)
	cs := clients.NewStore(rd)
	for _, c := range []struct {
		name string
		f    clients.Filter
		pg   page.Request
		want int64
		idx  string
	}{
		{"country", clients.Filter{Country: sp("NO")}, page.Request{Page: 1, Limit: 25}, 50000, "list_counts_pkey"},
		{"country, deep", clients.Filter{Country: sp("NO")}, page.Request{Page: 1900, Limit: 25}, 50000, "clients_country_idx"},
		// The deep page seeks through the country's blocks (migration
		// 00098): only the walk reads list_blocks.
		{"country, deep, seek", clients.Filter{Country: sp("NO")}, page.Request{Page: 1900, Limit: 25}, 50000, "list_blocks"},
		{"org_number", clients.Filter{OrgNumber: sp("55612345")}, page.Request{Page: 1, Limit: 25}, 1, "clients_org_number_idx"},
		{"org_number and country", clients.Filter{OrgNumber: sp("55612345"), Country: sp("NO")}, page.Request{Page: 1, Limit: 25}, 1, "clients_org_number_idx"},
		{"q", clients.Filter{NamePrefix: sp("client 1234")}, page.Request{Page: 1, Limit: 25}, 111, "clients_name_key_idx"},
		{"q and country", clients.Filter{NamePrefix: sp("CLIENT 1234"), Country: sp("SE")}, page.Request{Page: 2, Limit: 10}, 28, "clients_name_key_idx"},
		{"updated_since", clients.Filter{UpdatedSince: &recent}, page.Request{Page: 1, Limit: 100}, 1000, "clients_updated_idx"},
		{"updated_since, page 10", clients.Filter{UpdatedSince: &recent}, page.Request{Page: 10, Limit: 100}, 1000, "clients_updated_idx"},
	} {
		out, total, err := cs.List(ctx, c.f, c.pg)
		if err != nil || total != c.want || len(out) == 0 {
			t.Fatalf("%s: %d rows, total %d (want %d), %v", c.name, len(out), total, c.want, err)
		}
		explain("clients by "+c.name, c.idx)
	}

	as := acts.NewStore(rd, nil, clients.NewStore(rd), templates.NewStore(rd))
	common, rare, client := int64(1), int64(2), int64(101)
	final := acts.StatusFinal
	for _, c := range []struct {
		name string
		f    acts.Filter
		pg   page.Request
		want int64
		idx  string
	}{
		{"template", acts.Filter{TemplateID: &rare}, page.Request{Page: 1, Limit: 25}, 1000, "acts_template_seq_idx"},
		{"template, deep", acts.Filter{TemplateID: &rare}, page.Request{Page: 39, Limit: 25}, 1000, "acts_template_seq_idx"},
		// A deep page of a large template seeks through the template's
		// blocks (migration 00101): only the walk reads list_blocks.
		{"template, deep, seek", acts.Filter{TemplateID: &common}, page.Request{Page: 3000, Limit: 25}, 99000, "list_blocks"},
		{"template and status", acts.Filter{TemplateID: &rare, Status: &final}, page.Request{Page: 1, Limit: 25}, 1000, "list_counts_pkey"},
		{"template and client", acts.Filter{TemplateID: &rare, ClientID: &client}, page.Request{Page: 1, Limit: 25}, 20, "acts_client_seq_idx"},
		{"updated_since", acts.Filter{UpdatedSince: &recentActs}, page.Request{Page: 1, Limit: 100}, 1000, "acts_updated_idx"},
		{"updated_since, page 10", acts.Filter{UpdatedSince: &recentActs}, page.Request{Page: 10, Limit: 100}, 1000, "acts_updated_idx"},
	} {
		out, total, err := as.List(ctx, c.f, c.pg)
		if err != nil || total != c.want || len(out) == 0 {
			t.Fatalf("acts by %s: %d rows, total %d (want %d), %v", c.name, len(out), total, c.want, err)
		}
		explain("acts by "+c.name, c.idx)
	}
}
