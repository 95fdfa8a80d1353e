package counts

import (
	"fmt"
	"testing"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
)

// BenchmarkCountedWrites measures what the counting triggers cost a write
// of acts (the list with the most buckets and block series): one act
// inserted, moved to another status and deleted, one statement each
// ("row"), and the same for 1,000 acts per statement ("bulk"), with the
// generated triggers and with those they replaced (migration 00270's
// Down), on each dialect.
func BenchmarkCountedWrites(b *testing.B) {
	for _, dialect := range testdb.Dialects() {
		for _, triggers := range []string{"generated", "before270"} {
			for _, rows := range []int{1, 1000} {
				name := fmt.Sprintf("%s/%s/rows=%d", dialect, triggers, rows)
				b.Run(name, func(b *testing.B) {
					d := testdb.Open(b, dialect)
					_, a := testdb.NewTenant(b, d, "acme")
					if triggers == "before270" {
						migrate(b, d, nil)
					}
					exec := func(q string, args ...any) {
						if err := d.Exec(q, args...).Error; err != nil {
							b.Fatal(err)
						}
					}
					exec("INSERT INTO clients (tenant_id, id, company_name, org_number, country, credit_limit) VALUES (?, 1, 'a', '1', 'NO', 0)", a.ID)
					exec("INSERT INTO templates (tenant_id, id, family_id, version, name) VALUES (?, 1, 1, 1, 't')", a.ID)
					uuid := "printf('%032x', ? + i)"
					if d.Dialect == db.Postgres {
						uuid = "lpad(to_hex(? + i), 32, '0')::uuid"
					}
					insert := `INSERT INTO acts (tenant_id, uuid, client_id, template_id, title, status, seq)
						WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < ?)
						SELECT ?, ` + uuid + `, 1, 1, 'a', 'draft', ? + i FROM g`
					b.ResetTimer()
					for i := range b.N {
						base := i * rows
						exec(insert, rows, a.ID, base, base)
						exec("UPDATE acts SET status = 'final' WHERE tenant_id = ? AND seq > ?", a.ID, base)
						exec("DELETE FROM acts WHERE tenant_id = ? AND seq > ?", a.ID, base)
					}
				})
			}
		}
	}
}
