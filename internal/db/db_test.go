package db_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
)

func TestSQLitePragmas(t *testing.T) {
	d := testdb.SQLite(t)
	sqlDB, err := d.DB.DB()
	if err != nil {
		t.Fatal(err)
	}
	// Check several pooled connections, not just the first: pragmas are
	// per connection.
	ctx := t.Context()
	var conns []interface{ Close() error }
	for i := range 3 {
		c, err := sqlDB.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		var mode string
		var fk, busy int
		if err := c.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil {
			t.Fatal(err)
		}
		if mode != "wal" || fk != 1 || busy != 5000 {
			t.Errorf("conn %d: journal_mode=%s foreign_keys=%d busy_timeout=%d; want wal, 1, 5000", i, mode, fk, busy)
		}
	}
	for _, c := range conns {
		c.Close()
	}
}

// TestSQLiteTxTakesWriteLock proves _txlock=immediate: while one
// transaction is open, a second BEGIN waits, even for a read-only body.
func TestSQLiteTxTakesWriteLock(t *testing.T) {
	d := testdb.SQLite(t)
	ctx := t.Context()
	entered := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- d.Tx(ctx, func(tx *gorm.DB) error {
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered
	second := make(chan time.Time, 1)
	go func() {
		_ = d.Tx(ctx, func(tx *gorm.DB) error {
			second <- time.Now()
			return tx.Exec("SELECT 1").Error
		})
	}()
	select {
	case <-second:
		t.Fatal("second transaction began while the first held the write lock")
	case <-time.After(300 * time.Millisecond):
	}
	releasedAt := time.Now()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if began := <-second; began.Before(releasedAt) {
		t.Fatal("second transaction began before the first committed")
	}
}

// A database that applied later migrations before a lower-numbered one
// landed (00062 after 00081) gets it on the next start instead of refusing
// to start. Simulated by forgetting 00062 and undoing it by hand.
func TestMigrateAppliesOutOfOrder(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx := t.Context()
		for _, q := range []string{
			"DELETE FROM goose_db_version WHERE version_id = 62",
			"CREATE INDEX deliveries_due_idx ON deliveries (next_attempt_at) WHERE status IN ('pending', 'delivering')",
		} {
			if err := d.Exec(q).Error; err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := d.Migrate(ctx); err != nil {
			t.Fatalf("Migrate with 00062 missing: %v", err)
		}
		if d.Migrator().HasIndex("deliveries", "deliveries_due_idx") {
			t.Error("deliveries_due_idx still exists: 00062 was not applied")
		}
		cur, latest, err := d.MigrationVersion(ctx)
		if err != nil || cur != latest {
			t.Fatalf("MigrationVersion = %d, %d, %v; want equal", cur, latest, err)
		}
	})
}

func TestMigrateIdempotentAndReversible(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx := t.Context()
		if err := d.Migrate(ctx); err != nil {
			t.Fatalf("second Migrate: %v", err)
		}
		cur, latest, err := d.MigrationVersion(ctx)
		if err != nil || cur != latest || cur < 1 {
			t.Fatalf("MigrationVersion = %d, %d, %v; want equal and >= 1", cur, latest, err)
		}
		if err := d.MigrateDownTo(ctx, 0); err != nil {
			t.Fatalf("MigrateDownTo(0): %v", err)
		}
		if d.Migrator().HasTable("tenants") {
			t.Error("tenants still exists after migrating down to 0")
		}
		if err := d.Migrate(ctx); err != nil {
			t.Fatalf("Migrate after down: %v", err)
		}
		if !d.Migrator().HasTable("users") {
			t.Error("users missing after migrating up again")
		}
	})
}

// A roll back that would drop the audit log while it holds records is
// refused and changes nothing; naming the table lets it go.
func TestMigrateDownKeepsTheAuditLog(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, _ := testdb.NewTenant(t, d, "acme")
		if err := audit.Record(ctx, d.DB, audit.Entry{Action: audit.UserCreated, TargetType: audit.TargetUser, TargetID: "1"}); err != nil {
			t.Fatal(err)
		}
		_, latest, _ := d.MigrationVersion(ctx)
		err := d.MigrateDownTo(ctx, 159)
		if err == nil || !strings.Contains(err.Error(), "audit_log and its 1 records") {
			t.Fatalf("MigrateDownTo(159) with an audit record = %v", err)
		}
		if cur, _, _ := d.MigrationVersion(ctx); cur != latest {
			t.Fatalf("a refused roll back moved the schema to %d", cur)
		}
		var n int64
		if err := d.Table("audit_log").Count(&n).Error; err != nil || n != 1 {
			t.Fatalf("audit records after the refusal: %d, %v", n, err)
		}
		if err := d.MigrateDownTo(ctx, 160); err != nil {
			t.Fatalf("a roll back that keeps the audit log: %v", err)
		}
		if err := d.MigrateDownTo(ctx, 0, "audit_log"); err != nil {
			t.Fatalf("MigrateDownTo(0, audit_log): %v", err)
		}
		if d.Migrator().HasTable("audit_log") {
			t.Fatal("audit_log kept after a roll back that discards it")
		}
		if err := d.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestNextIDsPerTenant(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		_, a := testdb.NewTenant(t, d, "acme")
		_, b := testdb.NewTenant(t, d, "beta")
		g := d.WithContext(t.Context())
		next := func(tid int64, seq string, n int) int64 {
			t.Helper()
			id, err := db.NextIDs(g, tid, seq, n)
			if err != nil {
				t.Fatalf("NextIDs(%d, %s, %d): %v", tid, seq, n, err)
			}
			return id
		}
		if got := next(a.ID, "clients", 1); got != 1 {
			t.Errorf("first acme client id = %d, want 1", got)
		}
		if got := next(b.ID, "clients", 1); got != 1 {
			t.Errorf("first beta client id = %d, want 1 (ids are per tenant)", got)
		}
		if got := next(a.ID, "clients", 3); got != 2 {
			t.Errorf("acme block of 3 starts at %d, want 2", got)
		}
		if got := next(a.ID, "clients", 1); got != 5 {
			t.Errorf("acme next after block = %d, want 5", got)
		}
		if got := next(a.ID, "acts", 1); got != 1 {
			t.Errorf("acme first act id = %d, want 1 (sequences are independent)", got)
		}
		if got := next(b.ID, "clients", 1); got != 2 {
			t.Errorf("beta second client id = %d, want 2", got)
		}
		if _, err := db.NextIDs(g, a.ID, "clients", 0); err == nil {
			t.Error("NextIDs(n=0) succeeded")
		}

		// A rolled-back transaction returns its allocation.
		errRollback := errors.New("rollback")
		err := d.Tx(t.Context(), func(tx *gorm.DB) error {
			if id, err := db.NextIDs(tx, a.ID, "clients", 10); err != nil || id != 6 {
				t.Errorf("NextIDs in tx = %d, %v; want 6", id, err)
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatalf("Tx = %v, want the callback's error", err)
		}
		if got := next(a.ID, "clients", 1); got != 6 {
			t.Errorf("after rollback next = %d, want 6", got)
		}
	})
}

func TestNextIDsConcurrent(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		_, a := testdb.NewTenant(t, d, "acme")
		const workers, each = 8, 10
		var mu sync.Mutex
		seen := map[int64]bool{}
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for range workers {
			wg.Go(func() {
				for range each {
					var id int64
					err := d.Tx(t.Context(), func(tx *gorm.DB) error {
						var err error
						id, err = db.NextIDs(tx, a.ID, "acts", 2)
						return err
					})
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					if seen[id] || seen[id+1] {
						errs <- fmt.Errorf("id %d allocated twice", id)
					}
					seen[id], seen[id+1] = true, true
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if len(seen) != workers*each*2 {
			t.Errorf("allocated %d distinct ids, want %d", len(seen), workers*each*2)
		}
		for id := int64(1); id <= workers*each*2; id++ {
			if !seen[id] {
				t.Errorf("gap: id %d never allocated", id)
			}
		}
	})
}

// TestForUpdateSerializesReadModifyWrite is the classic lost-update test:
// read a counter under ForUpdate in a transaction, then write it + 1.
// Without the row lock (PostgreSQL) or the write lock at BEGIN (SQLite),
// concurrent increments would be lost.
func TestForUpdateSerializesReadModifyWrite(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		_, a := testdb.NewTenant(t, d, "acme")
		if _, err := db.NextIDs(d.WithContext(t.Context()), a.ID, "counter", 1); err != nil {
			t.Fatal(err)
		}
		type seqRow struct {
			TenantID int64
			Name     string
			NextID   int64
		}
		const workers, each = 4, 10
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range each {
					err := d.Tx(t.Context(), func(tx *gorm.DB) error {
						var r seqRow
						if err := d.ForUpdate(tx.Table("id_sequences")).
							Where("tenant_id = ? AND name = ?", a.ID, "counter").Take(&r).Error; err != nil {
							return err
						}
						return tx.Table("id_sequences").Where("tenant_id = ? AND name = ?", a.ID, "counter").
							Update("next_id", r.NextID+1).Error
					})
					if err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		var r seqRow
		if err := d.Table("id_sequences").Where("tenant_id = ? AND name = ?", a.ID, "counter").Take(&r).Error; err != nil {
			t.Fatal(err)
		}
		if want := int64(2 + workers*each); r.NextID != want {
			t.Errorf("counter = %d, want %d (lost updates)", r.NextID, want)
		}
	})
}

func TestForUpdateSQL(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		var rows []map[string]any
		sql := d.ToSQL(func(tx *gorm.DB) *gorm.DB {
			return d.ForUpdate(tx.Table("users")).Find(&rows)
		})
		if d.Dialect == db.Postgres {
			if !strings.HasSuffix(sql, "FOR UPDATE") {
				t.Errorf("postgres: got %q", sql)
			}
		} else if strings.Contains(sql, "FOR") {
			t.Errorf("sqlite must not get a locking clause: %q", sql)
		}
	})
}

func TestConstraintErrors(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		g := d.WithContext(t.Context())
		_, a := testdb.NewTenant(t, d, "acme")
		err := g.Exec("INSERT INTO tenants (slug, name) VALUES (?, ?)", "acme", "again").Error
		if !db.IsUniqueViolation(err) {
			t.Errorf("duplicate slug: IsUniqueViolation(%v) = false", err)
		}
		if db.IsForeignKeyViolation(err) {
			t.Errorf("duplicate slug: IsForeignKeyViolation(%v) = true", err)
		}
		insUser := "INSERT INTO users (tenant_id, id, email, name, role, password_hash, created_at, updated_at) VALUES (?, ?, ?, '', 'admin', 'x', ?, ?)"
		now := time.Now()
		if err := g.Exec(insUser, a.ID, 1, "a@x.io", now, now).Error; err != nil {
			t.Fatal(err)
		}
		err = g.Exec(insUser, a.ID, 1, "b@x.io", now, now).Error
		if !db.IsUniqueViolation(err) {
			t.Errorf("duplicate primary key: IsUniqueViolation(%v) = false", err)
		}
		err = g.Exec(insUser, a.ID+1000, 1, "a@x.io", now, now).Error
		if !db.IsForeignKeyViolation(err) || db.IsUniqueViolation(err) {
			t.Errorf("unknown tenant: got %v; want a foreign-key violation", err)
		}
		err = g.Exec("INSERT INTO tenants (slug, name) VALUES (?, ?)", "Bad Slug", "x").Error
		if err == nil || db.IsUniqueViolation(err) {
			t.Errorf("bad slug: got %v; want a check violation", err)
		}
		if db.IsUniqueViolation(nil) || db.IsUniqueViolation(errors.New("x")) || db.IsForeignKeyViolation(nil) {
			t.Error("nil or plain errors must not be constraint violations")
		}

		// Deleting a tenant cascades to its rows.
		if _, err := db.NextIDs(g, a.ID, "clients", 1); err != nil {
			t.Fatal(err)
		}
		if err := g.Exec("DELETE FROM tenants WHERE id = ?", a.ID).Error; err != nil {
			t.Fatal(err)
		}
		for _, table := range []string{"users", "id_sequences"} {
			var n int64
			if err := g.Table(table).Where("tenant_id = ?", a.ID).Count(&n).Error; err != nil || n != 0 {
				t.Errorf("%s rows after tenant delete = %d, %v; want 0 (ON DELETE CASCADE)", table, n, err)
			}
		}
	})
}

func TestCountQueries(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		_, a := testdb.NewTenant(t, d, "acme")
		counted, count := d.CountQueries()
		ctx := context.Background()

		var n int64
		var rows []map[string]any
		q := counted.WithContext(ctx).Table("users").Where("tenant_id = ?", a.ID)
		if err := q.Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		if err := q.Limit(10).Find(&rows).Error; err != nil {
			t.Fatal(err)
		}
		if got := count(); got != 2 {
			t.Errorf("count + page = %d queries, want 2", got)
		}

		err := counted.Tx(ctx, func(tx *gorm.DB) error {
			if _, err := db.NextIDs(tx, a.ID, "x", 1); err != nil {
				return err
			}
			return tx.Table("users").Find(&rows).Error
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := count(); got != 4 {
			t.Errorf("after a transaction with 2 statements: %d queries, want 4", got)
		}

		// The original handle is not counted, and still works.
		if err := d.WithContext(ctx).Table("users").Find(&rows).Error; err != nil {
			t.Fatal(err)
		}
		if got := count(); got != 4 {
			t.Errorf("query on the uncounted handle changed the count to %d", got)
		}
		if err := counted.Ping(ctx); err != nil {
			t.Errorf("Ping on counted handle: %v", err)
		}
	})
}

func TestTimesAreUTC(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		_, a := testdb.NewTenant(t, d, "acme")
		var got struct{ CreatedAt time.Time }
		if err := d.Table("tenants").Where("id = ?", a.ID).Take(&got).Error; err != nil {
			t.Fatal(err)
		}
		if !got.CreatedAt.Equal(a.CreatedAt) {
			t.Errorf("created_at round trip: wrote %v, read %v", a.CreatedAt, got.CreatedAt)
		}
		if time.Since(got.CreatedAt).Abs() > time.Minute {
			t.Errorf("created_at = %v, not now", got.CreatedAt)
		}
	})
}
