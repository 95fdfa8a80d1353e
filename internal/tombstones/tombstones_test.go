package tombstones_test

import (
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/tombstones"
)

// Tombstones page by (deleted_at, id) after a time, per tenant and list;
// a second deletion of the same id moves its tombstone; the purge deletes
// only those older than its horizon, across tenants.
func TestRecordListPurge(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, _ := testdb.NewTenant(t, d, "acme")
		other, _ := testdb.NewTenant(t, d, "other")
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		client := int64(3)
		for i, id := range []string{"1", "2", "3"} {
			if err := tombstones.Record(ctx, d.DB, tombstones.Clients, id, nil, base.Add(time.Duration(i)*time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		if err := tombstones.Record(ctx, d.DB, tombstones.Acts, "0b8f5e2a-3c1d-4e6f-9a7b-2c4d6e8f0a1b", &client, base); err != nil {
			t.Fatal(err)
		}
		if err := tombstones.Record(other, d.DB, tombstones.Clients, "1", nil, base); err != nil {
			t.Fatal(err)
		}
		ids := func(since *time.Time, p page.Request) (out []string, total int64) {
			t.Helper()
			list, total, err := tombstones.List(ctx, d.DB, tombstones.Clients, since, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range list {
				out = append(out, x.ID)
			}
			return out, total
		}
		if got, n := ids(nil, page.Request{Page: 1, Limit: 10}); n != 3 || len(got) != 3 || got[0] != "1" {
			t.Fatalf("all = %v, %d", got, n)
		}
		after := base.Add(30 * time.Minute)
		if got, n := ids(&after, page.Request{Page: 2, Limit: 1}); n != 2 || len(got) != 1 || got[0] != "3" {
			t.Fatalf("after 00:30, page 2 = %v, %d", got, n)
		}
		// Deleted again (an import brought it back): the tombstone moves.
		if err := tombstones.Record(ctx, d.DB, tombstones.Clients, "1", nil, base.Add(5*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if got, n := ids(&after, page.Request{Page: 1, Limit: 10}); n != 3 || len(got) != 3 || got[2] != "1" {
			t.Fatalf("after the second deletion = %v, %d", got, n)
		}
		n, err := tombstones.Purge(ctx, d, base.Add(90*time.Minute), 10)
		if err != nil || n != 3 { // acme's "2" and act, other's "1"
			t.Fatalf("Purge = %d, %v; want 3", n, err)
		}
		if got, n := ids(nil, page.Request{Page: 1, Limit: 10}); n != 2 || got[0] != "3" || got[1] != "1" {
			t.Fatalf("after the purge = %v, %d", got, n)
		}
	})
}
