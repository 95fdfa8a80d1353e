package clients_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/finsvc/finsvc/internal/acts"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"golang.org/x/text/language"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/money"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
)

func input(name string) clients.Input {
	return clients.Input{CompanyName: name, OrgNumber: "923456781", Country: "NO", CreditLimit: money.MustParse("250000.50")}
}

func mustCreate(t *testing.T, s *clients.Store, ctx context.Context, in clients.Input) *clients.Client {
	t.Helper()
	c, err := s.Create(ctx, in)
	if err != nil {
		t.Fatalf("Create(%+v): %v", in, err)
	}
	return c
}

// insertAct inserts a bare act (and a one-field template) for client id,
// standing in for the acts store in tests of client deletion.
func insertAct(t *testing.T, d *db.DB, ctx context.Context, clientID int64) {
	t.Helper()
	tid := tenant.ID(ctx)
	tplID, err := db.NextID(d.DB, tid, "templates")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Table("templates").Create(map[string]any{
		"tenant_id": tid, "id": tplID, "family_id": tplID, "version": 1, "name": "t",
	}).Error; err != nil {
		t.Fatal(err)
	}
	seq, err := acts.NextSeq(d.DB, tid)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Table("acts").Create(map[string]any{
		"tenant_id": tid, "uuid": uuid.NewString(), "client_id": clientID, "template_id": tplID,
		"title": "act", "status": "draft", "seq": seq,
	}).Error; err != nil {
		t.Fatal(err)
	}
}

func fieldsOf(t *testing.T, err error) map[string][]string {
	t.Helper()
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Kind != apperr.Invalid {
		t.Fatalf("err = %v, want apperr.Invalid", err)
	}
	return ae.Fields
}

func TestStoreCRUDTwoTenants(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		s := clients.NewStore(d)
		ctxA, _ := testdb.NewTenant(t, d, "acme")
		ctxB, _ := testdb.NewTenant(t, d, "bravo")

		a1 := mustCreate(t, s, ctxA, input("Acme One"))
		b1 := mustCreate(t, s, ctxB, input("Bravo One"))
		a2 := mustCreate(t, s, ctxA, input("Acme Two"))
		if a1.ID != 1 || b1.ID != 1 || a2.ID != 2 {
			t.Fatalf("ids = %d, %d, %d; want per-tenant ids 1, 1, 2", a1.ID, b1.ID, a2.ID)
		}

		got, err := s.Get(ctxB, 1)
		if err != nil || got.CompanyName != "Bravo One" {
			t.Fatalf("Get(B, 1) = %+v, %v; want Bravo One", got, err)
		}
		if _, err := s.Get(ctxB, 2); !apperr.Is(err, apperr.NotFound) {
			t.Fatalf("Get(B, 2) err = %v, want NotFound (acme's client 2)", err)
		}
		if got.CreatedAt.IsZero() || !got.CreatedAt.Equal(got.UpdatedAt) {
			t.Fatalf("timestamps = %v, %v", got.CreatedAt, got.UpdatedAt)
		}

		list, total, err := s.List(ctxA, clients.Filter{}, page.Request{Page: 1, Limit: 25})
		if err != nil || total != 2 || len(list) != 2 || list[0].ID != 1 || list[1].ID != 2 {
			t.Fatalf("List(A) = %+v, %d, %v", list, total, err)
		}

		// Partial update in B leaves A's client 1 alone.
		name, cl := "Bravo Renamed", money.MustParse("10.5")
		up, err := s.Update(ctxB, 1, clients.Patch{CompanyName: &name, CreditLimit: &cl})
		if err != nil {
			t.Fatal(err)
		}
		if up.CompanyName != name || up.CreditLimit.String() != "10.5" || up.OrgNumber != "923456781" || up.Country != "NO" {
			t.Fatalf("Update = %+v", up)
		}
		if !up.UpdatedAt.After(up.CreatedAt) && !up.UpdatedAt.Equal(up.CreatedAt) {
			t.Fatalf("updated_at %v before created_at %v", up.UpdatedAt, up.CreatedAt)
		}
		reread, _ := s.Get(ctxB, 1)
		if reread.CompanyName != name || reread.CreditLimit.String() != "10.5" || !reread.UpdatedAt.Equal(up.UpdatedAt) {
			t.Fatalf("re-read = %+v, want the update", reread)
		}
		if a, _ := s.Get(ctxA, 1); a.CompanyName != "Acme One" {
			t.Fatalf("tenant A's client changed: %+v", a)
		}
		if _, err := s.Update(ctxB, 2, clients.Patch{CompanyName: &name}); !apperr.Is(err, apperr.NotFound) {
			t.Fatalf("Update(B, 2) err = %v, want NotFound", err)
		}

		// Delete in B: A's client with the same id survives.
		if err := s.Delete(ctxB, 2); !apperr.Is(err, apperr.NotFound) {
			t.Fatalf("Delete(B, 2) err = %v, want NotFound", err)
		}
		if err := s.Delete(ctxB, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctxB, 1); !apperr.Is(err, apperr.NotFound) {
			t.Fatalf("deleted client still there: %v", err)
		}
		if _, err := s.Get(ctxA, 1); err != nil {
			t.Fatalf("A's client 1 gone with B's: %v", err)
		}
	})
}

func TestStoreDeleteRefusedWithActs(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		s := clients.NewStore(d)
		ctxA, _ := testdb.NewTenant(t, d, "acme")
		ctxB, _ := testdb.NewTenant(t, d, "bravo")
		a := mustCreate(t, s, ctxA, input("Acme"))
		b := mustCreate(t, s, ctxB, input("Bravo"))
		insertAct(t, d, ctxA, a.ID)

		err := s.Delete(ctxA, a.ID)
		if f := fieldsOf(t, err); len(f["client"]) == 0 {
			t.Fatalf("errors = %v, want errors.client", f)
		}
		if _, err := s.Get(ctxA, a.ID); err != nil {
			t.Fatalf("client deleted despite refusal: %v", err)
		}
		// B's client with the same id has no acts of its own.
		if err := s.Delete(ctxB, b.ID); err != nil {
			t.Fatalf("Delete(B) = %v; A's act must not count for B", err)
		}
	})
}

func TestStoreValidation(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		s := clients.NewStore(d)
		ctx, _ := testdb.NewTenant(t, d, "acme")
		cases := []struct {
			name  string
			in    clients.Input
			field string
		}{
			{"blank name", clients.Input{CompanyName: "  ", OrgNumber: "1", Country: "NO"}, "company_name"},
			{"long name", clients.Input{CompanyName: string(make([]byte, 201)), OrgNumber: "1", Country: "NO"}, "company_name"},
			{"control char", clients.Input{CompanyName: "a\x00b", OrgNumber: "1", Country: "NO"}, "company_name"},
			{"no org number", clients.Input{CompanyName: "A", Country: "NO"}, "org_number"},
			{"unassigned country", clients.Input{CompanyName: "A", OrgNumber: "1", Country: "XX"}, "country"},
			{"user-assigned country", clients.Input{CompanyName: "A", OrgNumber: "1", Country: "ZZ"}, "country"},
			{"lower-case country", clients.Input{CompanyName: "A", OrgNumber: "1", Country: "no"}, "country"},
			{"negative limit", clients.Input{CompanyName: "A", OrgNumber: "1", Country: "NO", CreditLimit: money.MustParse("-1")}, "credit_limit"},
			{"three decimals", clients.Input{CompanyName: "A", OrgNumber: "1", Country: "NO", CreditLimit: money.MustParse("1.005")}, "credit_limit"},
			{"too large", clients.Input{CompanyName: "A", OrgNumber: "1", Country: "NO", CreditLimit: money.MustParse("1000000000000000000")}, "credit_limit"},
			// Tiny values used to become 0 in parsing and were stored.
			{"tiny limit", clients.Input{CompanyName: "A", OrgNumber: "1", Country: "NO", CreditLimit: money.MustParse("1e-400")}, "credit_limit"},
			{"subnormal limit", clients.Input{CompanyName: "A", OrgNumber: "1", Country: "NO", CreditLimit: money.MustParse("1e-320")}, "credit_limit"},
			{"huge limit", clients.Input{CompanyName: "A", OrgNumber: "1", Country: "NO", CreditLimit: money.MustParse("1e300")}, "credit_limit"},
		}
		for _, c := range cases {
			_, err := s.Create(ctx, c.in)
			if f := fieldsOf(t, err); len(f[c.field]) == 0 {
				t.Errorf("%s: errors = %v, want errors.%s", c.name, f, c.field)
			}
		}
		if _, total, _ := s.List(ctx, clients.Filter{}, page.Request{Page: 1, Limit: 10}); total != 0 {
			t.Fatalf("%d clients stored by invalid creates", total)
		}
		// Trailing zeros beyond two places lose nothing and are accepted.
		c := mustCreate(t, s, ctx, clients.Input{CompanyName: "A", OrgNumber: "1", Country: "NO", CreditLimit: money.MustParse("1.500")})
		if c.CreditLimit.String() != "1.5" {
			t.Fatalf("credit_limit = %s", c.CreditLimit)
		}
		bad := "XK"
		if _, err := s.Update(ctx, c.ID, clients.Patch{Country: &bad}); len(fieldsOf(t, err)["country"]) == 0 {
			t.Fatalf("Update country XK: %v", err)
		}
	})
}

// TestCreditLimitExact stores amounts that float64 cannot represent and
// reads them back digit for digit, through the store and from the column.
func TestCreditLimitExact(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		s := clients.NewStore(d)
		ctx, tn := testdb.NewTenant(t, d, "acme")
		for _, v := range []string{"12345678901234567.89", "999999999999999999.99", "0.01", "0", "90071992547409.93"} {
			c := mustCreate(t, s, ctx, clients.Input{CompanyName: "A", OrgNumber: "1", Country: "NO", CreditLimit: money.MustParse(v)})
			got, err := s.Get(ctx, c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.CreditLimit.String() != v {
				t.Errorf("credit_limit %s read back as %s", v, got.CreditLimit)
			}
			var raw string
			q := "SELECT CAST(credit_limit AS TEXT) FROM clients WHERE tenant_id = ? AND id = ?"
			if err := d.Raw(q, tn.ID, c.ID).Scan(&raw).Error; err != nil {
				t.Fatal(err)
			}
			if r, err := money.Parse(raw); err != nil || r.Cmp(money.MustParse(v)) != 0 {
				t.Errorf("column holds %q for %s", raw, v)
			}
		}
	})
}

func TestListPagination(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		s := clients.NewStore(d)
		ctx, _ := testdb.NewTenant(t, d, "acme")
		other, _ := testdb.NewTenant(t, d, "other")
		for i := 1; i <= 7; i++ {
			mustCreate(t, s, ctx, input(fmt.Sprintf("C%d", i)))
		}
		mustCreate(t, s, other, input("Other"))

		var ids []int64
		for p := 1; p <= 3; p++ {
			list, total, err := s.List(ctx, clients.Filter{}, page.Request{Page: p, Limit: 3})
			if err != nil || total != 7 {
				t.Fatalf("page %d: total %d, %v", p, total, err)
			}
			for _, c := range list {
				ids = append(ids, c.ID)
			}
		}
		if fmt.Sprint(ids) != "[1 2 3 4 5 6 7]" {
			t.Fatalf("ids across pages = %v", ids)
		}
		list, total, err := s.List(ctx, clients.Filter{}, page.Request{Page: 4, Limit: 3})
		if err != nil || total != 7 || list == nil || len(list) != 0 {
			t.Fatalf("past the end: %v, %d, %v; want empty non-nil, total 7", list, total, err)
		}
		if _, _, err := s.List(ctx, clients.Filter{}, page.Request{Page: 1, Limit: 101}); !apperr.Is(err, apperr.Invalid) {
			t.Fatalf("limit 101: %v", err)
		}
		if _, _, err := s.List(ctx, clients.Filter{}, page.Request{Page: 0, Limit: 10}); !apperr.Is(err, apperr.Invalid) {
			t.Fatalf("page 0: %v", err)
		}
	})
}

// A deep page of one country's clients (found through the country's
// blocks, migration 00098) holds what OFFSET over the filtered list holds,
// after clients move between countries through the store and are deleted;
// the first pages too, and past the end is empty.
func TestListByCountryDeepPages(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, _ := testdb.NewTenant(t, d, "acme")
		other, _ := testdb.NewTenant(t, d, "other")
		seed(t, d, ctx, 6000)
		seed(t, d, other, 1500)
		s := clients.NewStore(d)
		if err := tenant.Scope(ctx, d.DB.Table("clients")).Where("id % 3 = 0").Update("country", "SE").Error; err != nil {
			t.Fatal(err)
		}
		se, no := "SE", "NO"
		for _, id := range []int64{10, 2500, 5000} {
			if _, err := s.Update(ctx, id, clients.Patch{Country: &se}); err != nil {
				t.Fatal(err)
			}
		}
		if err := tenant.Scope(ctx, d.DB.Table("clients")).Where("id % 13 = 0 OR (id > 3000 AND id <= 3200)").Delete(nil).Error; err != nil {
			t.Fatal(err)
		}
		var want int64
		tenant.Scope(ctx, d.DB.Table("clients")).Where("country = ?", no).Count(&want)
		last := int(want+99) / 100
		for _, p := range []int{1, 20, 21, 30, last - 1, last, last + 1} {
			list, total, err := s.List(ctx, clients.Filter{Country: &no}, page.Request{Page: p, Limit: 100})
			if err != nil || total != want {
				t.Fatalf("page %d: total %d (want %d), %v", p, total, want, err)
			}
			var got, offset []int64
			for _, c := range list {
				got = append(got, c.ID)
			}
			tenant.Scope(ctx, d.DB.Table("clients")).Where("country = ?", no).Order("id").Offset((p-1)*100).Limit(100).Pluck("id", &offset)
			if fmt.Sprint(got) != fmt.Sprint(offset) || (p <= last && len(got) == 0) {
				t.Fatalf("page %d: %v, OFFSET gives %v", p, got, offset)
			}
		}
	})
}

// TestListQueryCount pins the list's shape: one COUNT plus one page query,
// whatever the page size, and only the COUNT past the end.
func TestListQueryCount(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, _ := testdb.NewTenant(t, d, "acme")
		seed(t, d, ctx, 150)
		counted, count := d.CountQueries()
		s := clients.NewStore(counted)
		for _, p := range []page.Request{{Page: 1, Limit: 100}, {Page: 2, Limit: 100}, {Page: 6, Limit: 25}} {
			before := count()
			list, total, err := s.List(ctx, clients.Filter{}, p)
			if err != nil || total != 150 {
				t.Fatal(total, err)
			}
			if n := count() - before; n != 2 {
				t.Errorf("page %+v (%d rows): %d queries, want 2", p, len(list), n)
			}
		}
		before := count()
		if _, _, err := s.List(ctx, clients.Filter{}, page.Request{Page: 3, Limit: 100}); err != nil {
			t.Fatal(err)
		}
		if n := count() - before; n != 1 {
			t.Errorf("past the end: %d queries, want 1", n)
		}
	})
}

// seed inserts n clients in batches (ids 1..n), for pagination tests and the
// benchmark.
func seed(tb testing.TB, d *db.DB, ctx context.Context, n int) {
	tb.Helper()
	tid := tenant.ID(ctx)
	first, err := db.NextIDs(d.DB, tid, clients.Sequence, n)
	if err != nil {
		tb.Fatal(err)
	}
	rows := make([]clients.Client, n)
	for i := range rows {
		rows[i] = clients.Client{
			TenantID: tid, ID: first + int64(i), CompanyName: fmt.Sprintf("Company %05d AS", i),
			OrgNumber: fmt.Sprintf("9%08d", i), Country: "NO", CreditLimit: money.MustParse(fmt.Sprintf("%d.%02d", 1000+i, i%100)),
		}
	}
	if err := d.WithContext(ctx).CreateInBatches(rows, 500).Error; err != nil {
		tb.Fatal(err)
	}
}

// TestCountriesAreISO cross-checks the list against CLDR's region data.
func TestCountriesAreISO(t *testing.T) {
	n := 0
	for a := 'A'; a <= 'Z'; a++ {
		for b := 'A'; b <= 'Z'; b++ {
			code := string([]rune{a, b})
			if !clients.ValidCountry(code) {
				continue
			}
			n++
			r, err := language.ParseRegion(code)
			if err != nil || r.String() != code {
				t.Errorf("%s: not an ISO 3166-1 region according to x/text: %v", code, err)
			}
		}
	}
	if n != 249 {
		t.Fatalf("%d codes, want the 249 officially assigned", n)
	}
	for _, code := range []string{"EU", "UN", "XK", "ZZ", "AA", "QO", "UK"} {
		if clients.ValidCountry(code) {
			t.Errorf("%s accepted; it is not officially assigned", code)
		}
	}
}

func BenchmarkList(b *testing.B) {
	for _, dialect := range testdb.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			d := testdb.Open(b, dialect)
			ctx, _ := testdb.NewTenant(b, d, "bench")
			seed(b, d, ctx, 10_000)
			s := clients.NewStore(d)
			for _, p := range []page.Request{{Page: 1, Limit: 25}, {Page: 1, Limit: 100}, {Page: 100, Limit: 100}} {
				b.Run(fmt.Sprintf("page=%d/limit=%d", p.Page, p.Limit), func(b *testing.B) {
					for b.Loop() {
						list, total, err := s.List(ctx, clients.Filter{}, p)
						if err != nil || total != 10_000 || len(list) != p.Limit {
							b.Fatal(len(list), total, err)
						}
					}
				})
			}
		})
	}
}

// TestDeleteRacesActCreation races deleting a client against creating an act
// for it. Either may win, but the delete never fails with anything other
// than the errors.client refusal, and never leaves an act without a client.
func TestDeleteRacesActCreation(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		s := clients.NewStore(d)
		ctx, tn := testdb.NewTenant(t, d, "acme")
		insertAct(t, d, ctx, mustCreate(t, s, ctx, input("Template holder")).ID) // creates template 1
		outcomes := map[string]int{}
		for round := range 10 {
			c := mustCreate(t, s, ctx, input(fmt.Sprintf("Round %d", round)))
			var delErr, actErr error
			var wg sync.WaitGroup
			wg.Go(func() { delErr = s.Delete(ctx, c.ID) })
			wg.Go(func() {
				actErr = d.Tx(ctx, func(tx *gorm.DB) error {
					seq, err := acts.NextSeq(tx, tn.ID)
					if err != nil {
						return err
					}
					return tx.Table("acts").Create(map[string]any{
						"tenant_id": tn.ID, "uuid": uuid.NewString(), "client_id": c.ID, "template_id": 1,
						"title": "act", "status": "draft", "seq": seq,
					}).Error
				})
			})
			wg.Wait()
			_, getErr := s.Get(ctx, c.ID)
			switch {
			case delErr == nil && actErr != nil && db.IsForeignKeyViolation(actErr) && apperr.Is(getErr, apperr.NotFound):
				outcomes["deleted first"]++
			case delErr != nil && actErr == nil && getErr == nil:
				if f := fieldsOf(t, delErr); len(f["client"]) == 0 {
					t.Fatalf("round %d: delete refused without errors.client: %v", round, delErr)
				}
				outcomes["act first"]++
			default:
				t.Fatalf("round %d: delete %v, act %v, client afterwards %v", round, delErr, actErr, getErr)
			}
		}
		t.Logf("outcomes: %v", outcomes)
	})
}

// TestGetInTxHoldsClient: a client read with Get(ctx, tx, id) cannot be
// deleted before tx commits, so an act inserted later in tx never loses its
// client to a concurrent DELETE; the DELETE then sees the act and refuses.
func TestGetInTxHoldsClient(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		s := clients.NewStore(d)
		ctx, tn := testdb.NewTenant(t, d, "acme")
		insertAct(t, d, ctx, mustCreate(t, s, ctx, input("Template holder")).ID) // template 1
		for round := range 6 {
			c := mustCreate(t, s, ctx, input(fmt.Sprintf("Round %d", round)))
			var delErr error
			var wg sync.WaitGroup
			err := d.Tx(ctx, func(tx *gorm.DB) error {
				if _, err := s.GetTx(ctx, tx, c.ID); err != nil {
					return err
				}
				wg.Go(func() { delErr = s.Delete(ctx, c.ID) })
				seq, err := acts.NextSeq(tx, tn.ID)
				if err != nil {
					return err
				}
				return tx.Table("acts").Create(map[string]any{
					"tenant_id": tn.ID, "uuid": uuid.NewString(), "client_id": c.ID, "template_id": 1,
					"title": "act", "status": "draft", "seq": seq,
				}).Error
			})
			wg.Wait()
			if err != nil {
				t.Fatalf("round %d: act creation after Get in tx failed: %v", round, err)
			}
			if f := fieldsOf(t, delErr); len(f["client"]) == 0 {
				t.Fatalf("round %d: delete = %v, want the errors.client refusal", round, delErr)
			}
		}
	})
}

// The client.* events are written in the change's transaction: a change
// rolled back by an enclosing transaction leaves no event, an empty patch
// and a refused delete none either, and each committed change exactly one,
// carrying the client as it was written.
func TestClientEventsShareTheTransaction(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		s := clients.NewStore(d)
		ctx, _ := testdb.NewTenant(t, d, "acme")
		kinds := func() map[string]int {
			var ks []string
			if err := d.Table("events").Where("tenant_id = ?", tenant.ID(ctx)).Pluck("kind", &ks).Error; err != nil {
				t.Fatal(err)
			}
			out := map[string]int{}
			for _, k := range ks {
				out[k]++
			}
			return out
		}
		rollback := errors.New("roll back")
		if err := d.InTx(ctx, func(ctx db.TxContext, _ *gorm.DB) error {
			mustCreate(t, s, ctx, input("Gone AB"))
			return rollback
		}); !errors.Is(err, rollback) {
			t.Fatal(err)
		}
		if k := kinds(); len(k) != 0 {
			t.Fatalf("after a rolled-back create: %v", k)
		}
		c := mustCreate(t, s, ctx, input("Acme One"))
		if _, err := s.Update(ctx, c.ID, clients.Patch{}); err != nil {
			t.Fatal(err)
		}
		limit := money.MustParse("1.00")
		if _, err := s.Update(ctx, c.ID, clients.Patch{CreditLimit: &limit}); err != nil {
			t.Fatal(err)
		}
		var payload string
		if err := d.Table("events").Where("kind = ?", "client.updated").Pluck("payload", &payload).Error; err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`"id":%d`, c.ID); !strings.Contains(payload, want) || !strings.Contains(payload, `"credit_limit":1`) {
			t.Fatalf("client.updated payload %s", payload)
		}
		insertAct(t, d, ctx, c.ID)
		if err := s.Delete(ctx, c.ID); err == nil {
			t.Fatal("deleted a client with acts")
		}
		c2 := mustCreate(t, s, ctx, input("Acme Two"))
		if err := s.Delete(ctx, c2.ID); err != nil {
			t.Fatal(err)
		}
		if k := kinds(); fmt.Sprint(k) != "map[client.created:2 client.deleted:1 client.updated:1]" {
			t.Fatalf("events %v", k)
		}
	})
}
