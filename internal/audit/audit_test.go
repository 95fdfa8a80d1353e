package audit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
)

func count(t *testing.T, d *db.DB) int64 {
	t.Helper()
	var n int64
	if err := d.Table("audit_log").Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// The database keeps the log append-only whatever the code does: UPDATE is
// refused, DELETE of a record younger than 90 days is refused, and only
// older records go, by the retention purge (which keeps 90 days whatever it
// is asked). A record written in a transaction that rolls back is gone
// with it.
func TestAppendOnly(t *testing.T) {
	if audit.MinRetention != config.MinAuditRetention {
		t.Fatalf("audit.MinRetention %s, config.MinAuditRetention %s", audit.MinRetention, config.MinAuditRetention)
	}
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, tn := testdb.NewTenant(t, d, "acme")
		ctx = audit.WithRequest(ctx, audit.Request{Addr: "203.0.113.7", UserAgent: "test", RequestID: "r1"})
		if err := audit.RecordAlone(ctx, d, audit.Entry{Action: audit.SignIn, Actor: audit.UserActor(1)}); err != nil {
			t.Fatal(err)
		}
		rollback := errors.New("roll back")
		if err := d.Tx(ctx, func(tx *gorm.DB) error {
			if err := audit.Record(ctx, tx, audit.Entry{Action: audit.UserCreated}); err != nil {
				return err
			}
			return rollback
		}); !errors.Is(err, rollback) {
			t.Fatal(err)
		}
		if n := count(t, d); n != 1 {
			t.Fatalf("%d records after a rollback, want 1", n)
		}
		if err := d.Exec("UPDATE audit_log SET outcome = 'failure'").Error; err == nil {
			t.Error("UPDATE of the audit log succeeded")
		}
		if err := d.Exec("DELETE FROM audit_log").Error; err == nil {
			t.Error("DELETE of a fresh audit record succeeded")
		}
		// A record of 100 days ago (written as an old row would be).
		old := time.Now().UTC().Add(-100 * 24 * time.Hour)
		if err := d.Create(&audit.Row{TenantID: tn.ID, ID: 1000, OccurredAt: old, ActorType: audit.ActorSystem,
			Action: audit.WebhookDisabled, Outcome: audit.Success}).Error; err != nil {
			t.Fatal(err)
		}
		if err := d.Exec("UPDATE audit_log SET outcome = 'failure' WHERE id = 1000").Error; err == nil {
			t.Error("UPDATE of an old audit record succeeded")
		}
		// Asked to keep only a day, the purge still keeps 90 days.
		n, err := audit.Purge(context.Background(), d, time.Now().Add(-24*time.Hour), 10)
		if err != nil || n != 1 {
			t.Fatalf("Purge = %d, %v; want the one old record", n, err)
		}
		if n := count(t, d); n != 1 {
			t.Fatalf("%d records after the purge, want the fresh one", n)
		}
		rows, more, err := audit.List(ctx, d.DB, audit.Filter{})
		if err != nil || more || len(rows) != 1 || rows[0].SourceAddr != "203.0.113.7" || rows[0].RequestID != "r1" ||
			rows[0].ActorUserID == nil || *rows[0].ActorUserID != 1 {
			t.Fatalf("List = %+v, %v, %v", rows, more, err)
		}
		if d.Dialect == db.Postgres {
			if err := d.Exec("TRUNCATE audit_log").Error; err == nil {
				t.Error("TRUNCATE of the audit log succeeded")
			}
		}
	})
}

// No statement replaces a record: SQLite's INSERT OR REPLACE and REPLACE
// INTO (which delete the conflicting row without firing a DELETE trigger)
// and an upsert on either dialect are refused, and the record stays as
// written.
func TestNoReplace(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, tn := testdb.NewTenant(t, d, "acme")
		if err := audit.RecordAlone(ctx, d, audit.Entry{Action: audit.SignIn, Actor: audit.UserActor(1)}); err != nil {
			t.Fatal(err)
		}
		var id int64
		if err := d.Table("audit_log").Where("tenant_id = ?", tn.ID).Pluck("id", &id).Error; err != nil {
			t.Fatal(err)
		}
		cols := "(tenant_id, id, occurred_at, actor_type, action, outcome) VALUES (?, ?, ?, 'system', 'user.deleted', 'failure')"
		stmts := []string{"INSERT INTO audit_log " + cols + " ON CONFLICT (tenant_id, id) DO UPDATE SET action = excluded.action, outcome = excluded.outcome"}
		if d.Dialect == db.SQLite {
			stmts = append(stmts, "INSERT OR REPLACE INTO audit_log "+cols, "REPLACE INTO audit_log "+cols)
		}
		for _, q := range stmts {
			if err := d.Exec(q, tn.ID, id, time.Now().UTC()).Error; err == nil {
				t.Errorf("%s: the record was replaced", q)
			}
		}
		var rows []audit.Row
		if err := d.Where("tenant_id = ?", tn.ID).Find(&rows).Error; err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0].Action != audit.SignIn || rows[0].Outcome != audit.Success {
			t.Fatalf("the log after the attempts: %+v", rows)
		}
	})
}
