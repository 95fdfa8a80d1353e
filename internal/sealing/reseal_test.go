package sealing_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/keyring"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/testdb"
)

var (
	oldSecret   = "old-secret-" + strings.Repeat("o", 32)
	newSecret   = "new-secret-" + strings.Repeat("n", 32)
	otherSecret = "other-secret-" + strings.Repeat("x", 32)
)

// col is a sealed column of a table of the test's own, keyed like the
// real ones (a number and a text).
var col = sealing.Column{
	Table: "sealed_things", Name: "v", Keys: []string{"tenant_id", "name"}, Purpose: "finsvc reseal test v1",
	AD: func(k []string) []byte { return []byte("thing:" + k[0] + ":" + k[1]) },
}

func ad(tid int, name string) []byte { return fmt.Appendf(nil, "thing:%d:%s", tid, name) }

// Reseal on both dialects: interrupted after its first batch it leaves
// that batch committed and the rest as it was (every value still opens),
// and run again it finishes: every value under the current key, opening
// with the old key gone. NULLs stay NULL; a value under a key no longer in
// the ring is reported and left alone, without stopping the others.
func TestResealInterruptAndResume(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx := t.Context()
		if err := d.DB.Exec(`CREATE TABLE sealed_things (tenant_id bigint NOT NULL, name text NOT NULL, v text, PRIMARY KEY (tenant_id, name))`).Error; err != nil {
			t.Fatal(err)
		}
		oldBox, _ := sealing.NewFor(keyring.MustNew(oldSecret), col.Purpose)
		const rows = 25
		want := map[string]string{}
		for i := range rows {
			tid, name := 1+i%3, fmt.Sprintf("n%02d", i)
			pt := "secret-" + name
			ct, err := oldBox.Seal(pt, ad(tid, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := d.DB.Exec(`INSERT INTO sealed_things VALUES (?, ?, ?)`, tid, name, ct).Error; err != nil {
				t.Fatal(err)
			}
			want[fmt.Sprint(tid)+":"+name] = pt
		}
		if err := d.DB.Exec(`INSERT INTO sealed_things VALUES (9, 'null', NULL)`).Error; err != nil {
			t.Fatal(err)
		}
		lost, _ := sealing.NewFor(keyring.MustNew(otherSecret), col.Purpose)
		lostCT, _ := lost.Seal("lost", ad(0, "lost"))
		if err := d.DB.Exec(`INSERT INTO sealed_things VALUES (0, 'lost', ?)`, lostCT).Error; err != nil {
			t.Fatal(err)
		}

		rotated, err := keyring.Parse(newSecret, oldSecret, "")
		if err != nil {
			t.Fatal(err)
		}
		cur, old := keyring.ID(newSecret), keyring.ID(oldSecret)

		// Interrupted after the first batch of 10: the lost value sorts
		// first (tenant 0), so 9 are resealed.
		stop, cancel := context.WithCancel(ctx)
		batches := 0
		err = sealing.Reseal(stop, d.DB, rotated, []sealing.Column{col}, 10, func(p sealing.Progress) {
			batches++
			cancel()
		})
		if !errors.Is(err, context.Canceled) || batches != 1 {
			t.Fatalf("interrupted Reseal = %v after %d batches", err, batches)
		}
		counts := status(t, d, rotated)
		if counts[cur] != 9 || counts[old] != rows-9 || counts[keyring.ID(otherSecret)] != 1 {
			t.Fatalf("after the interruption: %v", counts)
		}
		check(t, d, rotated, want)

		// Resumed.
		var last sealing.Progress
		err = sealing.Reseal(ctx, d.DB, rotated, []sealing.Column{col}, 10, func(p sealing.Progress) { last = p })
		if !errors.Is(err, sealing.ErrNotResealed) {
			t.Fatalf("Reseal with a lost value = %v", err)
		}
		if last.Resealed != rows-9 || last.Failed != 1 {
			t.Fatalf("last progress %+v", last)
		}
		counts = status(t, d, rotated)
		if counts[cur] != rows || counts[old] != 0 {
			t.Fatalf("after the reseal: %v", counts)
		}
		// The old key can go: everything still opens.
		check(t, d, keyring.MustNew(newSecret), want)
		var nulls int64
		d.DB.Raw(`SELECT count(*) FROM sealed_things WHERE v IS NULL`).Scan(&nulls)
		if nulls != 1 {
			t.Fatalf("NULL values: %d", nulls)
		}
		// Nothing left to do: a second run changes nothing.
		if err := d.DB.Exec(`DELETE FROM sealed_things WHERE name = 'lost'`).Error; err != nil {
			t.Fatal(err)
		}
		calls := 0
		if err := sealing.Reseal(ctx, d.DB, rotated, []sealing.Column{col}, 10, func(sealing.Progress) { calls++ }); err != nil || calls != 0 {
			t.Fatalf("second Reseal = %v, %d batches", err, calls)
		}
	})
}

func status(t *testing.T, d *db.DB, r *keyring.Ring) map[string]int64 {
	t.Helper()
	cs, err := sealing.Status(t.Context(), d.DB, []sealing.Column{col})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, c := range cs {
		out[c.KeyID] += c.N
	}
	return out
}

func check(t *testing.T, d *db.DB, r *keyring.Ring, want map[string]string) {
	t.Helper()
	box, _ := sealing.NewFor(r, col.Purpose)
	var rows []struct {
		TenantID int64
		Name     string
		V        string
	}
	if err := d.DB.Raw(`SELECT tenant_id, name, v FROM sealed_things WHERE v IS NOT NULL AND name <> 'lost'`).Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for _, row := range rows {
		got, err := box.Open(row.V, ad(int(row.TenantID), row.Name))
		if err != nil || got != want[fmt.Sprint(row.TenantID)+":"+row.Name] {
			t.Fatalf("row %d:%s opens to %q, %v", row.TenantID, row.Name, got, err)
		}
	}
}
