package demo_test

import (
	"testing"

	"github.com/finsvc/finsvc/internal/acts"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/demo"
	"github.com/finsvc/finsvc/internal/fieldtype"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/templates"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/users"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

func TestSeedTemplatesAndClients(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		cfg := config.Default()
		cfg.Addr = "127.0.0.1:43210"
		for run := 0; run < 2; run++ { // the second run must not duplicate
			if _, err := demo.Seed(t.Context(), d, cfg, stores(d)); err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
		}
		tn, err := tenant.NewStore(d).BySlug(t.Context(), demo.TenantSlug)
		if err != nil {
			t.Fatal(err)
		}
		ctx := tenant.NewContext(t.Context(), tn)

		tpls, total, err := templates.NewStore(d).List(ctx, templates.Filter{}, page.Request{Page: 1, Limit: 10})
		if err != nil || total != 2 {
			t.Fatalf("templates: %d, %v", total, err)
		}
		cr := tpls[0]
		if cr.Name != "Credit review" {
			t.Fatalf("first template %q", cr.Name)
		}
		sources := map[templates.Source]int{}
		hasTable := false
		for _, f := range cr.Fields {
			sources[f.Source]++
			hasTable = hasTable || f.FieldType() == fieldtype.Table
			// Every field's example value is accepted with its stored
			// options: the options are usable, not only valid.
			o, err := f.ParsedOptions()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fieldtype.Normalize(f.FieldType(), o, fieldtype.Example(f.FieldType(), o)); err != nil {
				t.Errorf("%s: example rejected: %v", f.Key, err)
			}
		}
		if !hasTable || sources[templates.SourceExternalData] < 3 || sources[templates.SourceManual] < 1 ||
			sources[templates.SourceClientCreditLimit] != 1 || sources[templates.SourceActCreatedAt] != 1 {
			t.Fatalf("Credit review sources %v, table %v", sources, hasTable)
		}

		cl, total, err := clients.NewStore(d).List(ctx, clients.Filter{}, page.Request{Page: 1, Limit: 10})
		if err != nil || total != 5 {
			t.Fatalf("clients: %d, %v", total, err)
		}
		if cl[0].CompanyName != "Nordic Timber AS" || cl[0].CreditLimit.String() != "250000" {
			t.Fatalf("first client %+v", cl[0])
		}
	})
}

func TestSeedActs(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		cfg := config.Default()
		cfg.Addr = "127.0.0.1:43210"
		for run := 0; run < 2; run++ { // the second run must not duplicate
			if _, err := demo.Seed(t.Context(), d, cfg, stores(d)); err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
		}
		tn, err := tenant.NewStore(d).BySlug(t.Context(), demo.TenantSlug)
		if err != nil {
			t.Fatal(err)
		}
		ctx := tenant.NewContext(t.Context(), tn)
		st := acts.NewStore(d, nil, clients.NewStore(d), templates.NewStore(d))
		list, total, err := st.List(ctx, acts.Filter{}, page.Request{Page: 1, Limit: 10})
		if err != nil || total != 3 {
			t.Fatalf("acts: %d, %v", total, err)
		}
		byTitle := map[string]acts.Act{}
		for _, a := range list {
			byTitle[a.Title] = a
		}
		if byTitle["Credit review 2025"].Status != acts.StatusFinal || byTitle["Credit review 2026"].Status != acts.StatusDraft {
			t.Errorf("statuses: %+v", byTitle)
		}
		a, err := st.Get(ctx, byTitle["Credit review 2025"].UUID)
		if err != nil {
			t.Fatal(err)
		}
		vals := map[string]string{}
		for _, dp := range a.Data {
			if dp.Value != nil {
				vals[dp.Key] = *dp.Value
			}
		}
		if vals["rating"] != "A" || vals["company_name"] != "Fjord Shipping ASA" || vals["key_figures"] == "" {
			t.Errorf("final act values: %v", vals)
		}
	})
}

// stores are the demo's stores as the composition root builds them.
func stores(d *db.DB) demo.Stores {
	cs, ts := clients.NewStore(d), templates.NewStore(d)
	return demo.Stores{Users: users.NewStore(d), Clients: cs, Templates: ts, Acts: acts.NewStore(d, &outbox.Outbox{}, cs, ts)}
}
