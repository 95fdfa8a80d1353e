package counts

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
)

// The triggers are checked against the one statement of what is counted
// (truthCounts, truthBlocks): rows written with SQL to every counted list,
// changed and deleted, leave exactly the totals and blocks the statement
// computes, on both dialects. A throwaway change of the statement shows
// that the check fails either way: a bucket the triggers keep that the
// statement no longer names, and a bucket the statement names that no
// trigger keeps.
func TestTriggersMatchTheStatement(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		_, a := testdb.NewTenant(t, d, "acme")
		exec := func(q string, args ...any) {
			t.Helper()
			if err := d.Exec(q, args...).Error; err != nil {
				t.Fatal(err)
			}
		}
		exec(`INSERT INTO clients (tenant_id, id, company_name, org_number, country, credit_limit) VALUES
			(?, 1, 'a', '111', 'NO', 0), (?, 2, 'b', '222', 'NO', 0), (?, 3, 'c', '222', 'SE', 0)`, a.ID, a.ID, a.ID)
		exec("UPDATE clients SET country = 'SE', org_number = '333' WHERE tenant_id = ? AND id = 2", a.ID)
		exec("INSERT INTO templates (tenant_id, id, family_id, version, name) VALUES (?, 1, 1, 1, 't'), (?, 2, 1, 2, 't')", a.ID, a.ID)
		exec("INSERT INTO users (tenant_id, id, email, name, role, password_hash) VALUES (?, 1, 'a@x', 'A', 'admin', '!'), (?, 2, 'm@x', 'M', 'member', '!')", a.ID, a.ID)
		for i := range 4 {
			exec("INSERT INTO acts (tenant_id, uuid, client_id, template_id, title, status, seq) VALUES (?, ?, ?, ?, 'a', 'draft', ?)",
				a.ID, fmt.Sprintf("00000000-0000-4000-8000-%012d", i), 1+i%2, 1+i/2, i+1)
		}
		exec("UPDATE acts SET status = 'final' WHERE tenant_id = ? AND seq < 3", a.ID)
		exec("DELETE FROM acts WHERE tenant_id = ? AND seq = 4", a.ID)
		exec(`INSERT INTO webhooks (tenant_id, id, event, target, active, secret_ciphertext, created_by_user_id) VALUES
			(?, 1, 'act.created', 'https://x.example', true, 'c', 1), (?, 2, 'act.created', 'https://y.example', true, 'c', 2)`, a.ID, a.ID)
		exec("DELETE FROM clients WHERE tenant_id = ? AND id = 3", a.ID)

		ctx := context.Background()
		if ms, err := checkAgainst(ctx, d.DB, truthCounts, truthBlocks); err != nil || len(ms) != 0 {
			t.Fatalf("the statement: %v %v", ms, err)
		}

		orgLine := "UNION ALL SELECT tenant_id, 'clients', 'org:' || org_number, count(*) FROM clients GROUP BY tenant_id, org_number\n"
		if !strings.Contains(truthCounts, orgLine) {
			t.Fatal("the statement's org: line moved; adjust the test")
		}
		for name, tc := range map[string]struct {
			counts, blocks, want string
		}{
			"a trigger keeps a bucket the statement lacks": {
				strings.Replace(truthCounts, orgLine, "", 1), truthBlocks, `clients "org:111": stored 1, actual 0`,
			},
			"the statement names a bucket no trigger keeps": {
				truthCounts + "\nUNION ALL SELECT tenant_id, 'clients', 'name:' || name_key, count(*) FROM clients GROUP BY tenant_id, name_key",
				truthBlocks, `clients "name:a": stored 0, actual 1`,
			},
			"a trigger keeps blocks the statement lacks": {
				truthCounts, strings.Replace(truthBlocks, "UNION ALL SELECT tenant_id, 'users', id >> 10, count(*) FROM users GROUP BY tenant_id, id >> 10\n", "", 1),
				`users "block:0": stored 2, actual 0`,
			},
		} {
			ms, err := checkAgainst(ctx, d.DB, tc.counts, tc.blocks)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			found := false
			for _, m := range ms {
				found = found || strings.HasSuffix(m.String(), tc.want)
			}
			if !found {
				t.Errorf("%s: mismatches %v, want one ending %q", name, ms, tc.want)
			}
		}
	})
}
