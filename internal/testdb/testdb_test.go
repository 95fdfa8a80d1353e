package testdb_test

import (
	"testing"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
)

func TestEachGivesIsolatedMigratedDatabases(t *testing.T) {
	var ran []string
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ran = append(ran, d.Dialect)
		other := testdb.Open(t, d.Dialect)
		_, a := testdb.NewTenant(t, d, "acme")
		if a.ID == 0 {
			t.Fatal("NewTenant returned no id")
		}
		var n int64
		if err := other.Model(&tenant.Tenant{}).Count(&n).Error; err != nil || n != 0 {
			t.Errorf("second database sees %d tenants (%v); want 0", n, err)
		}
		cur, latest, err := d.MigrationVersion(t.Context())
		if err != nil || cur != latest {
			t.Errorf("fresh database at version %d of %d (%v)", cur, latest, err)
		}
	})
	if want := testdb.Dialects(); len(ran) == 0 || ran[0] != want[0] {
		t.Errorf("Each ran %v; want %s first", ran, want[0])
	}
}
