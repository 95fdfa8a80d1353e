package counts_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/acts"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/templates"
	"github.com/finsvc/finsvc/internal/testdb"
)

// recorder is a connection pool that remembers every query it runs, so the
// test can EXPLAIN exactly what the stores send.
type recorder struct {
	gorm.ConnPool
	mu sync.Mutex
	qs []recorded
}

type recorded struct {
	sql  string
	args []any
}

func (r *recorder) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	r.mu.Lock()
	r.qs = append(r.qs, recorded{q, args})
	r.mu.Unlock()
	return r.ConnPool.QueryContext(ctx, q, args...)
}

func (r *recorder) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	r.mu.Lock()
	r.qs = append(r.qs, recorded{q, args})
	r.mu.Unlock()
	return r.ConnPool.QueryRowContext(ctx, q, args...)
}

func (r *recorder) take() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.qs
	r.qs = nil
	return out
}

// The list and filter plans (plans_test.go, filterplans_test.go) need a
// tenant at a size where a plan matters; it is seeded once, on PostgreSQL,
// for both: 200,000 clients in four countries and 100,000 acts of two
// templates in one tenant, beside a small tenant. Both only read it.
func TestPlansUseIndexes(t *testing.T) {
	t.Parallel() // seeds 300,000 rows in a database of its own
	d := testdb.Postgres(t)
	ctx, big := testdb.NewTenant(t, d, "big")
	testdb.NewTenant(t, d, "small")
	for _, s := range []string{
		`INSERT INTO clients (tenant_id, id, company_name, org_number, country, credit_limit, updated_at)
		 SELECT ?, g, 'Client ' || g, '556' || g, (ARRAY['SE','NO','DK','FI'])[1 + g % 4], 1000,
		        timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second' FROM generate_series(1, 200000) g`,
		`INSERT INTO templates (tenant_id, id, family_id, version, name) VALUES (?, 1, 1, 1, 'T'), (?, 2, 2, 1, 'U')`,
		`INSERT INTO acts (tenant_id, uuid, client_id, template_id, title, status, created_at, updated_at, seq)
		 SELECT ?, md5(g::text)::uuid, 1 + g % 5000, CASE WHEN g % 100 = 0 THEN 2 ELSE 1 END, 'Act ' || g,
		        CASE WHEN g % 4 = 0 THEN 'final' ELSE 'draft' END, now() - (100000 - g) * interval '1 second',
		        timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second', g
		 FROM generate_series(1, 100000) g`,
	} {
		args := []any{big.ID}
		if strings.Count(s, "?") == 2 {
			args = append(args, big.ID)
		}
		if err := d.Exec(s, args...).Error; err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Exec("VACUUM ANALYZE").Error; err != nil {
		t.Fatal(err)
	}
	t.Run("lists", func(t *testing.T) { listPlansUseIndexes(t, ctx, d) })
	t.Run("filters", func(t *testing.T) { filterPlansUseIndexes(t, ctx, d) })
}

// The list queries at a size where a plan matters (the tenant of
// TestPlansUseIndexes): the total is a
// primary-key read of list_counts, and every page query, deep ones
// included, reads an index, never the table sequentially. Pinned on
// PostgreSQL, where production runs.
func listPlansUseIndexes(t *testing.T, ctx context.Context, d *db.DB) {
	rec := &recorder{ConnPool: d.DB.Statement.ConnPool}
	// A Session with a Context clones the statement, so the pool is
	// replaced on the copy only (as db.CountQueries does).
	g := d.DB.Session(&gorm.Session{Context: context.Background()})
	g.Statement.ConnPool = rec
	rd := &db.DB{DB: g, Dialect: d.Dialect}

	explain := func(what string, wantIndex ...string) {
		t.Helper()
		qs := rec.take()
		if len(qs) == 0 {
			t.Fatalf("%s: no query recorded", what)
		}
		for _, q := range qs {
			var lines []string
			if err := d.Raw("EXPLAIN "+q.sql, q.args...).Scan(&lines).Error; err != nil {
				t.Fatalf("%s: EXPLAIN %s: %v", what, q.sql, err)
			}
			plan := strings.Join(lines, "\n")
			// list_blocks holds one row per 1,024 ids: reading a tenant's
			// few hundred is the point. The listed tables must never be
			// read sequentially.
			for _, tbl := range []string{"clients", "acts", "list_counts"} {
				if strings.Contains(plan, "Seq Scan on "+tbl+" ") || strings.HasSuffix(plan, "Seq Scan on "+tbl) {
					t.Errorf("%s: a sequential scan of %s in\n%s\n%s", what, tbl, q.sql, plan)
				}
			}
			if strings.Contains(q.sql, "count(") || strings.Contains(q.sql, "COUNT(") {
				t.Errorf("%s: a list request counts rows: %s", what, q.sql)
			}
		}
		var all strings.Builder
		for _, q := range qs {
			var lines []string
			d.Raw("EXPLAIN "+q.sql, q.args...).Scan(&lines)
			all.WriteString(strings.Join(lines, "\n"))
		}
		for _, idx := range wantIndex {
			if !strings.Contains(all.String(), idx) {
				t.Errorf("%s: plans do not use %s:\n%s", what, idx, all.String())
			}
		}
	}

	cs := clients.NewStore(rd)
	for _, pg := range []page.Request{{Page: 1, Limit: 25}, {Page: 4000, Limit: 25}, {Page: 7999, Limit: 25}} {
		out, total, err := cs.List(ctx, clients.Filter{}, pg)
		if err != nil || total != 200000 || len(out) != 25 || out[0].ID != int64((pg.Page-1)*25+1) {
			t.Fatalf("clients page %d: %d rows from id %v, total %d, %v", pg.Page, len(out), out, total, err)
		}
		explain(fmt.Sprintf("clients page %d", pg.Page), "list_counts_pkey", "clients_pkey")
	}

	as := acts.NewStore(rd, nil, clients.NewStore(rd), templates.NewStore(rd))
	final := acts.StatusFinal
	client := int64(42)
	for _, c := range []struct {
		name string
		f    acts.Filter
		pg   page.Request
		want int64
		idx  string
	}{
		{"acts page 1", acts.Filter{}, page.Request{Page: 1, Limit: 25}, 100000, "acts_seq_idx"},
		{"acts deep page", acts.Filter{}, page.Request{Page: 3000, Limit: 25}, 100000, "acts_seq_idx"},
		{"acts by status, deep", acts.Filter{Status: &final}, page.Request{Page: 900, Limit: 25}, 25000, "acts_status_seq_idx"},
		{"acts by client", acts.Filter{ClientID: &client}, page.Request{Page: 1, Limit: 25}, 20, "acts_client_seq_idx"},
	} {
		out, total, err := as.List(ctx, c.f, c.pg)
		if err != nil || total != c.want || len(out) == 0 {
			t.Fatalf("%s: %d rows, total %d (want %d), %v", c.name, len(out), total, c.want, err)
		}
		explain(c.name, c.idx)
	}
}
