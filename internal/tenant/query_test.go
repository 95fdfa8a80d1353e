package tenant_test

import (
	"errors"
	"testing"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
)

func TestNewQueryWantsTheTenantFirst(t *testing.T) {
	for _, ok := range []string{
		"SELECT name FROM tenant_probe WHERE tenant_id = ? AND id = ?",
		"SELECT p.name FROM tenant_probe p WHERE p.tenant_id = ? AND p.id = ?",
		"SELECT name FROM tenant_probe WHERE tenant_id =? AND id = ?",
	} {
		tenant.NewQuery(ok) // must not panic
	}
	for _, bad := range []string{
		"SELECT name FROM tenant_probe WHERE id = ? AND tenant_id = ?", // the tenant would get the id's value
		"SELECT name FROM tenant_probe WHERE id = ?",
		"SELECT name FROM tenant_probe",
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewQuery(%q) did not panic", bad)
				}
			}()
			tenant.NewQuery(bad)
		}()
	}
}

// A tenant.Query reads the current tenant's rows only, whichever path
// db.Query takes: two tenants hold the same ids.
func TestQueryIsScoped(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		if err := d.Exec("CREATE TABLE tenant_probe (tenant_id bigint NOT NULL, id bigint NOT NULL, name text NOT NULL, PRIMARY KEY (tenant_id, id))").Error; err != nil {
			t.Fatal(err)
		}
		acme, _ := testdb.NewTenant(t, d, "acme")
		globex, _ := testdb.NewTenant(t, d, "globex")
		if err := d.Exec("INSERT INTO tenant_probe VALUES (?, 1, 'acme one'), (?, 1, 'globex one'), (?, 2, 'globex two')",
			tenant.ID(acme), tenant.ID(globex), tenant.ID(globex)).Error; err != nil {
			t.Fatal(err)
		}
		q := tenant.NewQuery("SELECT name FROM tenant_probe WHERE tenant_id = ? AND id = ?")
		var name string
		if err := q.One(acme, d.DB, []any{1}, &name); err != nil || name != "acme one" {
			t.Errorf("acme's 1 = %q, %v", name, err)
		}
		if err := q.One(globex, d.DB, []any{1}, &name); err != nil || name != "globex one" {
			t.Errorf("globex's 1 = %q, %v", name, err)
		}
		if err := q.One(acme, d.DB, []any{2}, &name); !errors.Is(err, db.ErrNoRows) {
			t.Errorf("acme reading globex's 2 = %q, %v; want ErrNoRows", name, err)
		}
	})
}
