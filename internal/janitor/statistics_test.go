package janitor_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/janitor"
	"github.com/finsvc/finsvc/internal/testdb"
)

// bigTables are the tables that grow with a tenant and whose reads SQLite
// planned by growing scans without statistics (BENCHMARKS.md, "SQLite").
var bigTables = []string{"clients", "acts", "data_points", "fetch_request_fields"}

// seedSQLite writes clients (n of them), one template, n/3 acts with five
// data points each and a fetch request over up to 50 of those points.
func seedSQLite(t *testing.T, d *db.DB, tid int64, from, n int) {
	t.Helper()
	series := func(lo, hi int) string {
		return "WITH RECURSIVE s(g) AS (SELECT " + strconv.Itoa(lo) + " UNION ALL SELECT g + 1 FROM s WHERE g < " + strconv.Itoa(hi) + ") "
	}
	uuid := `printf('%08x-0000-4000-8000-%012x', g, g)`
	stmts := []string{
		series(from+1, from+n) + `INSERT INTO clients (tenant_id, id, company_name, org_number, country, credit_limit)
			SELECT ?, g, 'Client ' || g, '556' || g, 'SE', '1000' FROM s`,
		`INSERT INTO templates (tenant_id, id, family_id, version, name) VALUES (?, 1, 1, 1, 'T') ON CONFLICT DO NOTHING`,
		series(from/3+1, (from+n)/3) + `INSERT INTO acts (tenant_id, uuid, client_id, template_id, title, seq)
			SELECT ?, ` + uuid + `, g, 1, 'Act ' || g, g FROM s`,
		series(from/3*5+1, (from+n)/3*5) + `INSERT INTO data_points (tenant_id, id, act_uuid, template_field_id, position, key, name, type, source)
			SELECT ?, g, printf('%08x-0000-4000-8000-%012x', (g + 4) / 5, (g + 4) / 5), g, g, 'f' || g, 'F', 'text', 'manual' FROM s`,
		`INSERT INTO fetch_requests (tenant_id, id, act_uuid, requested_by_user_id, requested_at, expires_at)
			VALUES (?, 'fr1', printf('%08x-0000-4000-8000-%012x', 1, 1), 1, '2026-01-01 00:00:00.000+00:00', '2026-01-02 00:00:00.000+00:00')
			ON CONFLICT DO NOTHING`,
		series(1, min(50, (from+n)/3*5)) + `INSERT INTO fetch_request_fields (tenant_id, fetch_request_id, data_point_id, external, state, revision_snapshot)
			SELECT ?, 'fr1', g, 0, 'awaiting', 0 FROM s WHERE true ON CONFLICT DO NOTHING`,
	}
	for _, s := range stmts {
		if err := d.Exec(s, tid).Error; err != nil {
			t.Fatalf("seed: %v\n%s", err, s)
		}
	}
}

// analyzedRows returns, per table, the row count sqlite_stat1 holds for it
// (the first number of its stat), or nothing without the table.
func analyzedRows(t *testing.T, d *db.DB) map[string]int {
	t.Helper()
	var n int
	if err := d.Raw(`SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'`).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	rows := map[string]int{}
	if n == 0 {
		return rows
	}
	var stats []struct{ Tbl, Stat string }
	if err := d.Raw(`SELECT tbl, stat FROM sqlite_stat1`).Scan(&stats).Error; err != nil {
		t.Fatal(err)
	}
	for _, s := range stats {
		first, _, _ := strings.Cut(s.Stat, " ")
		c, err := strconv.Atoi(first)
		if err != nil {
			t.Fatalf("sqlite_stat1 %s: stat %q", s.Tbl, s.Stat)
		}
		rows[s.Tbl] = max(rows[s.Tbl], c)
	}
	return rows
}

func TestStatisticsSQLite(t *testing.T) {
	ctx := context.Background()

	t.Run("janitor run", func(t *testing.T) {
		d := testdb.SQLite(t)
		_, tn := testdb.NewTenant(t, d, "stats")
		seedSQLite(t, d, tn.ID, 0, 30)
		for _, tbl := range bigTables {
			if n, ok := analyzedRows(t, d)[tbl]; ok {
				t.Fatalf("%s analyzed (%d rows) before any run", tbl, n)
			}
		}
		s := janitor.NewStatistics(d, nil)
		if err := s.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		got := analyzedRows(t, d)
		for _, tbl := range bigTables {
			if got[tbl] == 0 {
				t.Errorf("%s not analyzed by the janitor's run: sqlite_stat1 %v", tbl, got)
			}
		}
		if got["clients"] != 30 {
			t.Errorf("clients analyzed with %d rows, want 30", got["clients"])
		}

		// Tenfold growth: the next run analyzes the table again.
		seedSQLite(t, d, tn.ID, 30, 300)
		if err := s.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if got := analyzedRows(t, d); got["clients"] != 330 || got["acts"] != 110 {
			t.Errorf("after a tenfold growth clients/acts analyzed with %d/%d rows, want 330/110", got["clients"], got["acts"])
		}
	})

	t.Run("background loop", func(t *testing.T) {
		d := testdb.SQLite(t)
		_, tn := testdb.NewTenant(t, d, "stats")
		seedSQLite(t, d, tn.ID, 0, 30)
		s := janitor.NewStatistics(d, nil)
		s.FirstRun, s.Interval = 0, time.Hour
		ran := make(chan error, 1)
		s.Ran = func(err error) { ran <- err }
		s.Start(ctx)
		t.Cleanup(s.Stop)
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
		got := analyzedRows(t, d)
		for _, tbl := range bigTables {
			if got[tbl] == 0 {
				t.Errorf("%s not analyzed by the background run: sqlite_stat1 %v", tbl, got)
			}
		}
	})

	t.Run("open", func(t *testing.T) {
		d := testdb.SQLite(t)
		_, tn := testdb.NewTenant(t, d, "stats")
		seedSQLite(t, d, tn.ID, 0, 30)
		var file string
		if err := d.Raw(`SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&file).Error; err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		// A restart: the service opens a file that has rows but no
		// statistics.
		d2, err := db.Open(ctx, "sqlite:"+file, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d2.Close() })
		got := analyzedRows(t, d2)
		for _, tbl := range bigTables {
			if got[tbl] == 0 {
				t.Errorf("%s not analyzed on open: sqlite_stat1 %v", tbl, got)
			}
		}
	})
}

// On PostgreSQL autovacuum keeps the statistics: the janitor's run analyzes
// nothing (pg_stat_user_tables counts manual ANALYZEs apart from
// autovacuum's).
func TestStatisticsPostgresNoop(t *testing.T) {
	ctx := context.Background()
	d := testdb.Postgres(t)
	_, tn := testdb.NewTenant(t, d, "stats")
	if err := d.Exec(`INSERT INTO clients (tenant_id, id, company_name, org_number, country, credit_limit)
		SELECT ?, g, 'Client ' || g, '556' || g, 'SE', 1000 FROM generate_series(1, 30) g`, tn.ID).Error; err != nil {
		t.Fatal(err)
	}
	manual := func(tbl string) int64 {
		var n int64
		if err := d.Raw(`SELECT analyze_count FROM pg_stat_user_tables WHERE relname = ?`, tbl).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := janitor.NewStatistics(d, nil).RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tbl := range bigTables {
		if n := manual(tbl); n != 0 {
			t.Errorf("%s: %d manual ANALYZE after the janitor's run on PostgreSQL, want none", tbl, n)
		}
	}
	// The count would show one.
	if err := d.Exec(`ANALYZE clients`).Error; err != nil {
		t.Fatal(err)
	}
	if n := manual("clients"); n != 1 {
		t.Errorf("clients: analyze_count %d after ANALYZE, want 1", n)
	}
}
