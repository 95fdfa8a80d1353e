package testdb_test

import (
	"database/sql"
	"os"
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
	if len(ran) == 0 || ran[0] != db.SQLite {
		t.Errorf("Each ran %v; want sqlite first", ran)
	}
}

func TestPostgresDatabaseDroppedAfterTest(t *testing.T) {
	adminURL := os.Getenv(testdb.EnvDatabaseURL)
	var name string
	t.Run("inner", func(t *testing.T) {
		d := testdb.Postgres(t)
		if err := d.Raw("SELECT current_database()").Scan(&name).Error; err != nil {
			t.Fatal(err)
		}
	})
	if adminURL == "" {
		t.Skip("no PostgreSQL")
	}
	admin, err := sql.Open("pgx", adminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var exists bool
	if err := admin.QueryRow("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if name == "" || exists {
		t.Errorf("test database %q still exists after its test ended", name)
	}
}
