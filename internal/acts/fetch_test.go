package acts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/acts"
	"github.com/finsvc/finsvc/internal/acts/actstest"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/templates"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// bulkFixture is an act with n external number fields and a registration
// that makes fetch requests possible.
type bulkFixture struct {
	ctx   context.Context
	p     *auth.Principal
	act   *acts.Detail
	store *acts.Store
}

func newBulkFixture(tb testing.TB, d *db.DB, n int) *bulkFixture {
	tb.Helper()
	ctx, tn := testdb.NewTenant(tb, d, "acme")
	uid, err := db.NextID(d.DB, tn.ID, "users")
	if err != nil {
		tb.Fatal(err)
	}
	if err := d.Table("users").Create(map[string]any{"tenant_id": tn.ID, "id": uid, "email": "m@acme.test",
		"name": "M", "role": auth.RoleMember, "password_hash": "!"}).Error; err != nil {
		tb.Fatal(err)
	}
	p := &auth.Principal{TenantID: tn.ID, UserID: uid, Role: auth.RoleMember, ClientID: "bench-app",
		Scopes: []string{auth.ScopeActsRead, auth.ScopeActsWrite}}
	ctx = auth.NewContext(ctx, p)
	fields := make([]actstest.F, n)
	for i := range fields {
		fields[i] = actstest.F{Key: fmt.Sprintf("f%03d", i), Type: "number", Source: templates.SourceExternalData}
	}
	c := actstest.Client(tb, d, ctx, "Acme AB")
	tpl := actstest.Template(tb, d, ctx, "wide", fields...)
	actstest.Webhook(tb, d, ctx, uid, outbox.ActFetchData, "https://integration.example.com/hook")
	a, err := acts.NewStore(d, &outbox.Outbox{}, clients.NewStore(d), templates.NewStore(d)).Create(ctx, p, c.ID, tpl.ID, "bulk")
	if err != nil {
		tb.Fatal(err)
	}
	return &bulkFixture{ctx: ctx, p: p, act: a, store: acts.NewStore(d, &outbox.Outbox{}, clients.NewStore(d), templates.NewStore(d))}
}

// request opens a fetch request over the first n fields and returns the
// write answering all of them.
func (f *bulkFixture) request(tb testing.TB, n, round int) acts.DataWrite {
	tb.Helper()
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = f.act.Data[i].ID
	}
	v, err := f.store.CreateRequest(f.ctx, f.p, f.act.Act.UUID, ids)
	if err != nil {
		tb.Fatal(err)
	}
	w := acts.DataWrite{FetchRequestID: &v.Request.ID, Items: make([]acts.DataItem, n)}
	for i := range w.Items {
		id, val := ids[i], fmt.Sprintf("%d.%d", round, i)
		w.Items[i] = acts.DataItem{ID: &id, Value: &val}
	}
	return w
}

// A bulk PUT costs the same number of statements for 200 fields as for 2.
func TestBulkPutQueryCount(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newBulkFixture(t, d, 200)
		counted, count := d.CountQueries()
		cs := acts.NewStore(counted, &outbox.Outbox{}, clients.NewStore(counted), templates.NewStore(counted))
		got := map[int]int{}
		for round, n := range []int{2, 20, 200} {
			w := f.request(t, n, round)
			before := count()
			res, err := cs.WriteData(f.ctx, f.p, f.act.Act.UUID, w)
			if err != nil {
				t.Fatal(err)
			}
			got[n] = count() - before
			if len(res.Data) != n || *res.Data[n-1].Value != fmt.Sprintf("%d.%d", round, n-1) {
				t.Fatalf("bulk of %d: %d data points back", n, len(res.Data))
			}
			// Ordinary edits of the same fields: constant too.
			e := acts.DataWrite{Items: w.Items}
			for i := range e.Items {
				v := fmt.Sprintf("-%d", i)
				e.Items[i].Value = &v
			}
			before = count()
			if _, err := cs.WriteData(f.ctx, f.p, f.act.Act.UUID, e); err != nil {
				t.Fatal(err)
			}
			got[-n] = count() - before
		}
		t.Logf("statements per bulk PUT: %v (negative keys: ordinary edits)", got)
		if got[2] != got[200] || got[20] != got[200] || got[-2] != got[-200] {
			t.Errorf("statements grow with the item count: %v", got)
		}
		// act lock, request, data points, request fields, data point
		// update, field update, act touch (its sync stamp, db.Stamp, and
		// the update), history id allocation, history insert, latest
		// fetch states (11); then the request's fields, read to know that
		// it completed, and its two events, act.data_updated and
		// fetch_request.completed, emitted together (outbox.EmitAll): one
		// numbering, one insert and one look-up of the subscribers for
		// both (4).
		if got[200] > 15 {
			t.Errorf("a bulk PUT of 200 fields runs %d statements, want at most 15", got[200])
		}
		// Reading the act back is constant too (act, data points, states).
		before := count()
		if _, err := acts.NewStore(counted, nil, clients.NewStore(counted), templates.NewStore(counted)).Get(f.ctx, f.act.Act.UUID); err != nil {
			t.Fatal(err)
		}
		if n := count() - before; n != 3 {
			t.Errorf("GET act with 200 data points ran %d statements, want 3", n)
		}
	})
}

// BenchmarkBulkPut200 measures a correlated bulk PUT of 200 fields (the
// fetch request it answers is created outside the timer).
func BenchmarkBulkPut200(b *testing.B) {
	for _, dialect := range testdb.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			d := testdb.Open(b, dialect)
			f := newBulkFixture(b, d, 200)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				w := f.request(b, 200, i)
				b.StartTimer()
				if _, err := f.store.WriteData(f.ctx, f.p, f.act.Act.UUID, w); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGetAct200 measures reading an act with 200 data points and their
// fetch states (three statements).
func BenchmarkGetAct200(b *testing.B) {
	for _, dialect := range testdb.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			d := testdb.Open(b, dialect)
			f := newBulkFixture(b, d, 200)
			f.request(b, 200, 0)
			s := acts.NewStore(d, nil, clients.NewStore(d), templates.NewStore(d))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				a, err := s.Get(f.ctx, f.act.Act.UUID)
				if err != nil || len(a.Data) != 200 || len(a.Fetch) != 200 {
					b.Fatalf("Get = %v", err)
				}
			}
		})
	}
}

// GET of an act reads the same thing on every path db.Query takes: on
// PostgreSQL outside a transaction through pgx itself, inside one (and on
// SQLite) through GORM. An act with values, a fetch request and its states.
func TestGetIsTheSameOnEveryPath(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newBulkFixture(t, d, 30)
		if _, err := f.store.WriteData(f.ctx, f.p, f.act.Act.UUID, f.request(t, 10, 1)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.store.CreateRequest(f.ctx, f.p, f.act.Act.UUID, []int64{f.act.Data[20].ID}); err != nil {
			t.Fatal(err)
		}
		plain, err := f.store.Get(f.ctx, f.act.Act.UUID)
		if err != nil {
			t.Fatal(err)
		}
		var inTx *acts.Detail
		if err := d.InTx(f.ctx, func(ctx db.TxContext, _ *gorm.DB) error {
			inTx, err = f.store.Get(ctx, f.act.Act.UUID)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		a, b := plain.API, inTx.API
		pa, err := a()
		if err != nil {
			t.Fatal(err)
		}
		pb, err := b()
		if err != nil {
			t.Fatal(err)
		}
		ja, _ := json.Marshal(pa)
		jb, _ := json.Marshal(pb)
		if string(ja) != string(jb) {
			t.Fatalf("outside a transaction:\n%s\ninside one:\n%s", ja, jb)
		}
		if len(plain.Data) != 30 || len(plain.Fetch) != 11 || plain.Data[1].Value == nil || *plain.Data[1].Value != "1.1" {
			t.Fatalf("read %d data points, %d fetch states", len(plain.Data), len(plain.Fetch))
		}
	})
}
