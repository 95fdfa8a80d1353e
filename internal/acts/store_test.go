package acts_test

import (
	"errors"
	"fmt"
	"testing"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/acts"
	"github.com/finsvc/finsvc/internal/acts/actstest"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/templates"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

func count(t *testing.T, d *gorm.DB, table string) int64 {
	t.Helper()
	var n int64
	if err := d.Table(table).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// The act.created event is written in the act's transaction: when that
// transaction rolls back, neither the act nor the event exists, and when
// writing the event fails, the act is not created.
func TestCreateEventSharesTheTransaction(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, _ := testdb.NewTenant(t, d, "acme")
		c := actstest.Client(t, d, ctx, "Acme AB")
		tpl := actstest.Template(t, d, ctx, "T",
			actstest.F{Key: "revenue", Type: "integer", Source: templates.SourceExternalData},
			actstest.F{Key: "company", Type: "text", Source: templates.SourceClientCompanyName})
		p := &auth.Principal{UserID: 1, Role: auth.RoleMember}

		rollback := errors.New("roll back")
		err := d.Tx(ctx, func(tx *gorm.DB) error {
			txd := &db.DB{DB: tx, Dialect: d.Dialect}
			s := acts.NewStore(txd, &outbox.Outbox{}, clients.NewStore(txd), templates.NewStore(txd))
			if _, err := s.Create(ctx, p, c.ID, tpl.ID, "inside"); err != nil {
				return err
			}
			if n := count(t, tx, "events"); n != 1 {
				t.Errorf("inside the transaction: %d events, want 1", n)
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatalf("Tx = %v", err)
		}
		for _, table := range []string{"acts", "data_points", "act_history", "events"} {
			if n := count(t, d.DB, table); n != 0 {
				t.Errorf("after rollback: %d rows in %s", n, table)
			}
		}

		// A failing event write fails the whole creation.
		if err := d.Exec("ALTER TABLE events RENAME TO events_gone").Error; err != nil {
			t.Fatal(err)
		}
		s := acts.NewStore(d, &outbox.Outbox{}, clients.NewStore(d), templates.NewStore(d))
		if _, err := s.Create(ctx, p, c.ID, tpl.ID, "fails"); err == nil {
			t.Fatal("Create succeeded without an events table")
		}
		for _, table := range []string{"acts", "data_points", "act_history"} {
			if n := count(t, d.DB, table); n != 0 {
				t.Errorf("after a failed event write: %d rows in %s", n, table)
			}
		}
		if err := d.Exec("ALTER TABLE events_gone RENAME TO events").Error; err != nil {
			t.Fatal(err)
		}

		// Duplicating writes exactly one act.duplicated and no act.created.
		a, err := s.Create(ctx, p, c.ID, tpl.ID, "source")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Duplicate(ctx, p, a.Act.UUID); err != nil {
			t.Fatal(err)
		}
		var kinds []string
		if err := d.Table("events").Order("occurred_at").Pluck("kind", &kinds).Error; err != nil {
			t.Fatal(err)
		}
		if len(kinds) != 2 || kinds[0] != outbox.ActCreated || kinds[1] != outbox.ActDuplicated {
			t.Errorf("events = %v, want [act.created act.duplicated]", kinds)
		}
	})
}

// Listing acts is one count plus one page query, whatever the page size;
// reading one act is three queries whatever its number of data points.
func TestListAndGetQueryCount(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, _ := testdb.NewTenant(t, d, "acme")
		c := actstest.Client(t, d, ctx, "Acme AB")
		fields := make([]actstest.F, 60)
		for i := range fields {
			fields[i] = actstest.F{Key: fmt.Sprintf("f%02d", i), Type: "text", Source: templates.SourceExternalData}
		}
		tpl := actstest.Template(t, d, ctx, "T", fields...)
		p := &auth.Principal{UserID: 1, Role: auth.RoleMember}
		s := acts.NewStore(d, &outbox.Outbox{}, clients.NewStore(d), templates.NewStore(d))
		var last *acts.Detail
		for i := range 30 {
			a, err := s.Create(ctx, p, c.ID, tpl.ID, fmt.Sprint("act ", i))
			if err != nil {
				t.Fatal(err)
			}
			last = a
		}
		counted, count := d.CountQueries()
		cs := acts.NewStore(counted, nil, clients.NewStore(counted), templates.NewStore(counted))
		for _, limit := range []int{5, 30} {
			before := count()
			list, total, err := cs.List(ctx, acts.Filter{ClientID: &c.ID}, page.Request{Page: 1, Limit: limit})
			if err != nil || total != 30 || len(list) != limit {
				t.Fatalf("List(limit %d) = %d of %d, %v", limit, len(list), total, err)
			}
			if n := count() - before; n != 2 {
				t.Errorf("List(limit %d) ran %d queries, want 2", limit, n)
			}
		}
		before := count()
		got, err := cs.Get(ctx, last.Act.UUID)
		if err != nil || len(got.Data) != 60 {
			t.Fatalf("Get = %v, %v", got, err)
		}
		if n := count() - before; n != 3 {
			t.Errorf("Get ran %d queries, want 3", n)
		}
	})
}

// A deep page of one template's acts (found through the template's blocks,
// migration 00101) holds what OFFSET over that template's acts, newest
// first, holds, with two templates interleaved and holes; the first pages
// too, and past the end is empty.
func TestListByTemplateDeepPages(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, ten := testdb.NewTenant(t, d, "acme")
		c := actstest.Client(t, d, ctx, "Acme AB")
		t1 := actstest.Template(t, d, ctx, "T")
		t2 := actstest.Template(t, d, ctx, "U")
		for from := 0; from < 6000; from += 500 {
			sql := "INSERT INTO acts (tenant_id, uuid, client_id, template_id, title, status, seq) VALUES "
			var args []any
			for i := from; i < from+500; i++ {
				if i > from {
					sql += ", "
				}
				tpl := t1.ID
				if i%4 == 0 {
					tpl = t2.ID
				}
				sql += "(?, ?, ?, ?, ?, 'draft', ?)"
				args = append(args, ten.ID, fmt.Sprintf("00000000-0000-4000-8000-%012d", i), c.ID, tpl, fmt.Sprintf("a%d", i), i+1)
			}
			if err := d.Exec(sql, args...).Error; err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Exec("DELETE FROM acts WHERE seq % 13 = 0 OR (seq > 3000 AND seq <= 3300)").Error; err != nil {
			t.Fatal(err)
		}
		s := acts.NewStore(d, nil, clients.NewStore(d), templates.NewStore(d))
		q := func() *gorm.DB { return d.DB.Table("acts").Where("tenant_id = ? AND template_id = ?", ten.ID, t1.ID) }
		var want int64
		q().Count(&want)
		last := int(want+99) / 100
		for _, p := range []int{1, 20, 21, 30, last - 1, last, last + 1} {
			list, total, err := s.List(ctx, acts.Filter{TemplateID: &t1.ID}, page.Request{Page: p, Limit: 100})
			if err != nil || total != want {
				t.Fatalf("page %d: total %d (want %d), %v", p, total, want, err)
			}
			var got, offset []string
			for _, a := range list {
				got = append(got, a.Title)
			}
			q().Order("seq DESC").Offset((p-1)*100).Limit(100).Pluck("title", &offset)
			if fmt.Sprint(got) != fmt.Sprint(offset) || (p <= last && len(got) == 0) {
				t.Fatalf("page %d: %v, OFFSET gives %v", p, got, offset)
			}
		}
	})
}
