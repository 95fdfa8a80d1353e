package counts

import (
	"context"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/pressly/goose/v3"
	"gorm.io/gorm"

	declared "github.com/finsvc/finsvc/internal/counts/counted"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/migrations"
)

// The statements and the migrations are what declared.Lists generates: CI's
// go generate diff sees a stale counts.gen.go, but not a stale .sql file.
func TestGeneratedFilesAreFresh(t *testing.T) {
	if err := declared.Check(declared.Lists); err != nil {
		t.Fatal(err)
	}
	src, err := declared.GoFile(declared.Lists)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile("counts.gen.go"); err != nil || string(got) != string(src) {
		t.Errorf("counts.gen.go is not what declared.Lists generates (%v): run go generate ./internal/counts", err)
	}
	if truthCounts != declared.TruthCounts(declared.Lists) || truthBlocks != declared.TruthBlocks(declared.Lists) ||
		!slices.Equal(counted, declared.Tables(declared.Lists)) {
		t.Error("the compiled statements differ from declared.Lists: run go generate ./internal/counts")
	}
	for dialect, render := range map[string]func([]declared.List, string) string{
		db.Postgres: declared.Postgres, db.SQLite: declared.SQLite,
	} {
		fsys, err := migrations.FS(dialect)
		if err != nil {
			t.Fatal(err)
		}
		b, err := fs.ReadFile(fsys, declared.Migration+".sql")
		if err != nil {
			t.Fatal(err)
		}
		tail := declared.Split(string(b))
		if !strings.Contains(tail, "CREATE TRIGGER") {
			t.Errorf("%s %s: the Down restores no triggers", dialect, declared.Migration)
		}
		if string(b) != render(declared.Lists, tail) {
			t.Errorf("%s %s is not what declared.Lists generates: run go generate ./internal/counts", dialect, declared.Migration)
		}
	}
}

// A bucket and a block series added to the declaration alone, generated
// and migrated, are counted from the rows already there (the migration
// recounts) and kept by the triggers on every later write, and the
// statement generated with them computes what the triggers keep. The
// migration runs through goose, Down (the old triggers back) then Up, in a
// database holding rows.
func TestADeclaredBucketIsKept(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, a := testdb.NewTenant(t, d, "acme")
		exec := func(q string, args ...any) {
			t.Helper()
			if err := d.Exec(q, args...).Error; err != nil {
				t.Fatal(err)
			}
		}
		exec(`INSERT INTO clients (tenant_id, id, company_name, org_number, country, credit_limit) VALUES
			(?, 1, 'Alpha', '111', 'NO', 0), (?, 2, 'beta', '222', 'NO', 0)`, a.ID, a.ID)
		exec("INSERT INTO templates (tenant_id, id, family_id, version, name) VALUES (?, 1, 1, 1, 't')", a.ID)
		for i := range 3 {
			exec("INSERT INTO acts (tenant_id, uuid, client_id, template_id, title, status, seq) VALUES (?, ?, ?, 1, 'a', 'draft', ?)",
				a.ID, "00000000-0000-4000-8000-00000000000"+string(rune('1'+i)), 1+i/2, i+1)
		}

		lists := slices.Clone(declared.Lists)
		for i, l := range lists {
			switch l.Kind {
			case "clients":
				lists[i].Buckets = append(slices.Clone(l.Buckets), declared.Bucket{{Label: "name", Column: "name_key"}})
			case "acts":
				lists[i].Blocks = append(slices.Clone(l.Blocks), declared.Bucket{{Label: "c", Column: "client_id"}})
			}
		}
		if err := declared.Check(lists); err != nil {
			t.Fatal(err)
		}
		migrate(t, d, lists)

		// Written after the migration: an insert, moves between buckets,
		// a delete.
		exec("INSERT INTO clients (tenant_id, id, company_name, org_number, country, credit_limit) VALUES (?, 3, 'ALPHA', '333', 'SE', 0)", a.ID)
		exec("UPDATE clients SET name_key = 'gamma' WHERE tenant_id = ? AND id = 2", a.ID)
		exec("INSERT INTO acts (tenant_id, uuid, client_id, template_id, title, status, seq) VALUES (?, '00000000-0000-4000-8000-000000000009', 2, 1, 'a', 'draft', 4)", a.ID)
		exec("UPDATE acts SET client_id = 2 WHERE tenant_id = ? AND seq = 1", a.ID)
		exec("DELETE FROM acts WHERE tenant_id = ? AND seq = 3", a.ID)

		if ms, err := checkAgainst(ctx, d.DB, declared.TruthCounts(lists), declared.TruthBlocks(lists)); err != nil || len(ms) != 0 {
			t.Fatalf("the generated statement and triggers disagree: %v %v", ms, err)
		}
		for k, want := range map[Key]int64{{"clients", "name:alpha"}: 2, {"clients", "name:beta"}: 0, {"clients", "name:gamma"}: 1} {
			if n, err := Total(ctx, d.DB, k); err != nil || n != want {
				t.Errorf("%v: %d %v, want %d", k, n, err, want)
			}
		}
		for kind, want := range map[string]int64{"acts:c:1": 1, "acts:c:2": 2} {
			var n int64
			if err := d.Raw("SELECT coalesce(sum(n), 0) FROM list_blocks WHERE tenant_id = ? AND kind = ?", a.ID, kind).Scan(&n).Error; err != nil || n != want {
				t.Errorf("blocks %s: %d %v, want %d", kind, n, err, want)
			}
		}
		// Not vacuous: the shipped statement lacks them, and Check says so.
		ms, err := checkAgainst(ctx, d.DB, truthCounts, truthBlocks)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range ms {
			got = append(got, m.String())
		}
		slices.Sort(got)
		want := []string{
			`tenant 0 acts:c:1 "block:0": stored 1, actual 0`,
			`tenant 0 acts:c:2 "block:0": stored 2, actual 0`,
			`tenant 0 clients "name:alpha": stored 2, actual 0`,
			`tenant 0 clients "name:gamma": stored 1, actual 0`,
		}
		for i := range want {
			want[i] = strings.Replace(want[i], "tenant 0", "tenant "+strconv.FormatInt(a.ID, 10), 1)
		}
		if !slices.Equal(got, want) {
			t.Errorf("the shipped statement against the new triggers: %q, want %q", got, want)
		}
	})
}

// migrate replaces the generated migration of d by the one lists
// generate: goose runs the shipped one's Down, then the new one's Up (none
// for nil lists: the triggers of before the generated migration stay).
func migrate(t testing.TB, d *db.DB, lists []declared.List) {
	t.Helper()
	fsys, err := migrations.FS(d.Dialect)
	if err != nil {
		t.Fatal(err)
	}
	name := declared.Migration + ".sql"
	shipped, err := fs.ReadFile(fsys, name)
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, err := d.DB.DB()
	if err != nil {
		t.Fatal(err)
	}
	dialect, render := goose.DialectSQLite3, declared.SQLite
	if d.Dialect == db.Postgres {
		dialect, render = goose.DialectPostgres, declared.Postgres
	}
	version := int64(0)
	for _, c := range declared.Migration[:strings.IndexByte(declared.Migration, '_')] {
		version = version*10 + int64(c-'0')
	}
	steps := []struct {
		sql string
		up  bool
	}{{string(shipped), false}}
	if lists != nil {
		steps = append(steps, struct {
			sql string
			up  bool
		}{render(lists, declared.Split(string(shipped))), true})
	}
	for _, step := range steps {
		p, err := goose.NewProvider(dialect, sqlDB, fstest.MapFS{name: {Data: []byte(step.sql)}}, goose.WithDisableGlobalRegistry(true))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.ApplyVersion(context.Background(), version, step.up); err != nil {
			t.Fatalf("goose (up %v): %v", step.up, err)
		}
	}
}

// An update writes only the counters its rows leave and enter: none for a
// change of a column no bucket reads, or of a bucket column to the value
// it had; for an act moved from draft to final, the three status buckets
// and the status block series, old and new (8 rows).
func TestUpdatesWriteOnlyWhatMoves(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		_, a := testdb.NewTenant(t, d, "acme")
		for _, q := range []string{
			"INSERT INTO clients (tenant_id, id, company_name, org_number, country, credit_limit) VALUES (?, 1, 'a', '1', 'NO', 0)",
			"INSERT INTO templates (tenant_id, id, family_id, version, name) VALUES (?, 1, 1, 1, 't')",
			"INSERT INTO acts (tenant_id, uuid, client_id, template_id, title, status, seq) VALUES (?, '00000000-0000-4000-8000-000000000001', 1, 1, 'a', 'draft', 1)",
		} {
			if err := d.Exec(q, a.ID).Error; err != nil {
				t.Fatal(err)
			}
		}
		// Rows the counter tables took within the transaction (on SQLite,
		// every row changed, the update's own included).
		writes := "SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) FROM pg_stat_xact_user_tables WHERE relname IN ('list_counts', 'list_blocks')"
		own := int64(0)
		if d.Dialect == db.SQLite {
			writes, own = "SELECT total_changes()", 1
		}
		err := d.Transaction(func(tx *gorm.DB) error {
			for _, c := range []struct {
				update string
				want   int64
			}{
				{"UPDATE acts SET title = 'b' WHERE tenant_id = ?", 0},
				{"UPDATE acts SET status = 'draft', client_id = 1 WHERE tenant_id = ?", 0},
				{"UPDATE clients SET company_name = 'b', country = 'NO' WHERE tenant_id = ?", 0},
				{"UPDATE acts SET status = 'final' WHERE tenant_id = ?", 8},
			} {
				var before, after int64
				if err := tx.Raw(writes).Scan(&before).Error; err != nil {
					return err
				}
				if err := tx.Exec(c.update, a.ID).Error; err != nil {
					return err
				}
				if err := tx.Raw(writes).Scan(&after).Error; err != nil {
					return err
				}
				if got := after - before - own; got != c.want {
					t.Errorf("%s: the counters took %d rows, want %d", c.update, got, c.want)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TRUNCATE of one of the delivery log's two tables recounts the log from
// the other (PostgreSQL; SQLite has no TRUNCATE, and its DELETE runs the
// row triggers).
func TestTruncateOfOneDeliveryTableKeepsTheOther(t *testing.T) {
	d := testdb.Open(t, db.Postgres)
	ctx, a := testdb.NewTenant(t, d, "acme")
	for _, q := range []string{
		"INSERT INTO users (tenant_id, id, email, name, role, password_hash) VALUES (?, 1, 'a@x', 'A', 'admin', '!')",
		"INSERT INTO webhooks (tenant_id, id, event, target, active, secret_ciphertext, created_by_user_id) VALUES (?, 1, 'act.created', 'https://x.example', true, 'c', 1)",
		"INSERT INTO events (tenant_id, id, kind, payload, occurred_at) SELECT ?, ('00000000-0000-4000-8000-00000000000' || i)::uuid, 'act.created', '{}', now() FROM generate_series(1, 5) i",
		"INSERT INTO deliveries (tenant_id, id, webhook_id, event_id) SELECT ?, ('00000000-0000-4000-9000-00000000000' || i)::uuid, 1, ('00000000-0000-4000-8000-00000000000' || i)::uuid FROM generate_series(1, 2) i",
		"INSERT INTO delivery_history (tenant_id, id, webhook_id, event_id, status) SELECT ?, ('00000000-0000-4000-9000-00000000000' || i)::uuid, 1, ('00000000-0000-4000-8000-00000000000' || i)::uuid, 'succeeded' FROM generate_series(3, 5) i",
	} {
		if err := d.Exec(q, a.ID).Error; err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		stmt string
		want int64
	}{{"", 5}, {"TRUNCATE delivery_history", 2}, {"TRUNCATE deliveries", 0}} {
		if c.stmt != "" {
			if err := d.Exec(c.stmt).Error; err != nil {
				t.Fatal(err)
			}
		}
		if n, err := Total(ctx, d.DB, Deliveries(1)); err != nil || n != c.want {
			t.Errorf("after %q: %d %v, want %d", c.stmt, n, err, c.want)
		}
	}
	if ms, err := Check(ctx, d.DB); err != nil || len(ms) != 0 {
		t.Errorf("Check: %v %v", ms, err)
	}
}
