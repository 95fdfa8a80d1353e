package users_test

import (
	"errors"
	"strconv"
	"testing"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/users"
)

// Reactivating a deactivated user writes one user.reactivated record naming
// the acting admin and the user; reactivating an active user records
// nothing, and a reactivation rolled back leaves neither the change nor
// its record.
func TestReactivateAudited(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, tn := testdb.NewTenant(t, d, "acme")
		s := users.NewStore(d)
		admin, err := s.Create(ctx, "admin@example.com", "", auth.RoleAdmin, "correct horse battery")
		if err != nil {
			t.Fatal(err)
		}
		m, err := s.Create(ctx, "member@example.com", "", auth.RoleMember, "quiet violet harbor")
		if err != nil {
			t.Fatal(err)
		}
		ctx = auth.NewContext(ctx, &auth.Principal{TenantID: tn.ID, UserID: admin.ID, Role: auth.RoleAdmin})
		reactivated := func() []audit.Row {
			t.Helper()
			rows, _, err := audit.List(ctx, d.DB, audit.Filter{Action: audit.UserReactivated, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			return rows
		}
		if err := s.Deactivate(ctx, m.ID); err != nil {
			t.Fatal(err)
		}
		// Rolled back: still deactivated, no record.
		rollback := errors.New("roll back")
		if err := d.InTx(ctx, func(ctx db.TxContext, _ *gorm.DB) error {
			if _, err := s.Reactivate(ctx, m.ID); err != nil {
				return err
			}
			return rollback
		}); !errors.Is(err, rollback) {
			t.Fatal(err)
		}
		if u, err := s.Get(ctx, m.ID); err != nil || u.Active() {
			t.Fatalf("after a rolled-back reactivation: %+v, %v", u, err)
		}
		if rows := reactivated(); len(rows) != 0 {
			t.Fatalf("a rolled-back reactivation left %+v", rows)
		}
		if u, err := s.Reactivate(ctx, m.ID); err != nil || !u.Active() {
			t.Fatalf("Reactivate = %+v, %v", u, err)
		}
		if _, err := s.Reactivate(ctx, m.ID); err != nil { // already active: nothing to record
			t.Fatal(err)
		}
		rows := reactivated()
		if len(rows) != 1 {
			t.Fatalf("%d user.reactivated records, want 1: %+v", len(rows), rows)
		}
		r := rows[0]
		if r.ActorType != audit.ActorUser || r.ActorUserID == nil || *r.ActorUserID != admin.ID ||
			r.TargetType != audit.TargetUser || r.TargetID != strconv.FormatInt(m.ID, 10) || r.Outcome != audit.Success {
			t.Fatalf("record %+v", r)
		}
	})
}
