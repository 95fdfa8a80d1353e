package templates_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/finsvc/finsvc/internal/acts"
	"sync"
	"testing"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/fieldtype"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/templates"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
)

func ptr[T any](v T) *T { return &v }

func creditReview() templates.Input {
	return templates.Input{Name: "Credit review", Fields: []templates.FieldInput{
		{Key: "company_name", Name: "Company name", Type: fieldtype.Text, Source: templates.SourceClientCompanyName},
		{Key: "credit_limit", Name: "Credit limit", Type: fieldtype.Currency, Source: templates.SourceClientCreditLimit,
			Options: &fieldtype.Options{Currency: ptr("NOK")}},
		{Key: "review_date", Name: "Review date", Type: fieldtype.Date, Source: templates.SourceActCreatedAt},
		{Key: "equity_ratio", Name: "Equity ratio", Type: fieldtype.Percentage, Source: templates.SourceExternalData},
		{Key: "rating", Name: "Rating", Type: fieldtype.Select, Source: templates.SourceExternalData,
			Options: &fieldtype.Options{Choices: []string{"A", "B", "C"}}},
		{Key: "comment", Name: "Comment", Type: fieldtype.Text, Source: templates.SourceManual,
			Options: &fieldtype.Options{MaxLength: ptr(500)}},
	}}
}

func mustCreate(t *testing.T, s *templates.Store, ctx context.Context, in templates.Input) *templates.Template {
	t.Helper()
	tpl, err := s.Create(ctx, in)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return tpl
}

func fieldErrors(t *testing.T, err error) map[string][]string {
	t.Helper()
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Kind != apperr.Invalid {
		t.Fatalf("err = %v, want apperr.Invalid", err)
	}
	return ae.Fields
}

// useTemplate inserts a client and an act referencing template id.
func useTemplate(t *testing.T, d *gorm.DB, ctx context.Context, templateID int64) string {
	t.Helper()
	tid := tenant.ID(ctx)
	cid, err := db.NextID(d, tid, "clients")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Table("clients").Create(map[string]any{
		"tenant_id": tid, "id": cid, "company_name": "C", "org_number": "1", "country": "NO", "credit_limit": "0",
	}).Error; err != nil {
		t.Fatal(err)
	}
	u := uuid.NewString()
	seq, err := acts.NextSeq(d, tid)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Table("acts").Create(map[string]any{
		"tenant_id": tid, "uuid": u, "client_id": cid, "template_id": templateID, "title": "t", "status": "draft", "seq": seq,
	}).Error; err != nil {
		t.Fatal(err)
	}
	return u
}

func keys(t *templates.Template) string {
	var s []string
	for _, f := range t.Fields {
		s = append(s, fmt.Sprintf("%s#%d", f.Key, f.ID))
	}
	return fmt.Sprint(s)
}

func TestCreateGetTwoTenants(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		s := templates.NewStore(d)
		ctxA, _ := testdb.NewTenant(t, d, "acme")
		ctxB, _ := testdb.NewTenant(t, d, "bravo")
		a := mustCreate(t, s, ctxA, creditReview())
		a2 := mustCreate(t, s, ctxA, templates.Input{Name: "Second", Fields: []templates.FieldInput{
			{Key: "x", Name: "X", Type: fieldtype.Integer, Source: templates.SourceManual}}})
		b := mustCreate(t, s, ctxB, templates.Input{Name: "Bravo", Fields: []templates.FieldInput{
			{Key: "y", Name: "Y", Type: fieldtype.Boolean, Source: templates.SourceExternalData}}})
		if a.ID != 1 || a2.ID != 2 || b.ID != 1 || a.Version != 1 || a.FamilyID != a.ID || a.PreviousVersionID != nil {
			t.Fatalf("ids/versions: a=%d/%d a2=%d b=%d", a.ID, a.Version, a2.ID, b.ID)
		}
		if b.Fields[0].ID != 1 || a.Fields[0].ID != 1 || a2.Fields[0].ID != 7 {
			t.Fatalf("field ids: %s %s %s", keys(a), keys(a2), keys(b))
		}

		got, err := s.Get(ctxA, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "Credit review" || len(got.Fields) != 6 || got.InUse {
			t.Fatalf("Get = %+v", got)
		}
		for i, f := range got.Fields {
			if f.Position != i || f.Key != creditReview().Fields[i].Key || f.TemplateID != 1 {
				t.Fatalf("field %d = %+v (order)", i, f)
			}
		}
		// Effective options are stored: defaults filled in.
		if o := *got.Fields[0].Options; o != `{"max_length":10000}` {
			t.Errorf("text options = %s", o)
		}
		if o, err := got.Fields[1].ParsedOptions(); err != nil || *o.Currency != "NOK" || *o.Decimals != 2 || o.MaxLength != nil {
			t.Errorf("currency options = %s (%v)", *got.Fields[1].Options, err)
		}
		if got.Fields[2].Options != nil || got.Fields[3].Options != nil {
			t.Errorf("date/percentage options = %v, %v; want NULL", got.Fields[2].Options, got.Fields[3].Options)
		}
		if o, err := got.Fields[4].ParsedOptions(); err != nil || len(o.Choices) != 3 {
			t.Errorf("ParsedOptions = %+v, %v", o, err)
		}
		if !got.Fields[3].External() || got.Fields[0].External() {
			t.Error("External() wrong")
		}

		if _, err := s.Get(ctxB, 2); !apperr.Is(err, apperr.NotFound) {
			t.Fatalf("Get(B, 2) = %v, want NotFound (acme's template 2)", err)
		}
		gb, err := s.Get(ctxB, 1)
		if err != nil || gb.Name != "Bravo" || len(gb.Fields) != 1 {
			t.Fatalf("Get(B, 1) = %+v, %v", gb, err)
		}
		if _, _, err := s.Update(ctxB, 2, creditReview()); !apperr.Is(err, apperr.NotFound) {
			t.Fatalf("Update(B, 2) = %v, want NotFound", err)
		}

		// Get inside a transaction (the act-creation path) takes its lock
		// and reads the same thing.
		err = d.Tx(ctxA, func(tx *gorm.DB) error {
			in, err := s.GetTx(ctxA, tx, 1)
			if err == nil && keys(in) != keys(got) {
				err = fmt.Errorf("in tx: %s, want %s", keys(in), keys(got))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestValidation(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		s := templates.NewStore(d)
		ctx, _ := testdb.NewTenant(t, d, "acme")
		f := func(fields ...templates.FieldInput) templates.Input {
			return templates.Input{Name: "T", Fields: fields}
		}
		text := templates.FieldInput{Key: "a", Name: "A", Type: fieldtype.Text, Source: templates.SourceManual}
		with := func(key string, typ fieldtype.Type, src templates.Source, o *fieldtype.Options) templates.FieldInput {
			return templates.FieldInput{Key: key, Name: "N", Type: typ, Source: src, Options: o}
		}
		cases := []struct {
			name  string
			in    templates.Input
			field string
		}{
			{"no name", templates.Input{Name: " ", Fields: []templates.FieldInput{text}}, "name"},
			{"no fields", templates.Input{Name: "T"}, "fields"},
			{"duplicate key", f(text, with("b", fieldtype.Integer, "manual", nil), with("a", fieldtype.Date, "manual", nil)), "fields[2].key"},
			{"bad key", f(with("A b", fieldtype.Text, "manual", nil)), "fields[0].key"},
			{"blank field name", f(templates.FieldInput{Key: "a", Name: "", Type: fieldtype.Text, Source: "manual"}), "fields[0].name"},
			{"unknown type", f(with("a", "money", "manual", nil)), "fields[0].type"},
			{"unknown source", f(with("a", fieldtype.Text, "client.email", nil)), "fields[0].source"},
			{"option of another type", f(with("a", fieldtype.Integer, "manual", &fieldtype.Options{Decimals: ptr(2)})), "fields[0].options.decimals"},
			{"currency without code", f(with("a", fieldtype.Currency, "manual", nil)), "fields[0].options.currency"},
			{"nested column option", f(with("a", fieldtype.Table, "manual", &fieldtype.Options{Columns: []fieldtype.Column{
				{Key: "c", Name: "C", Type: fieldtype.Currency, Options: &fieldtype.Options{Currency: ptr("XXX1")}}}})), "fields[0].options.columns[0].options.currency"},
			{"company name as number", f(with("a", fieldtype.Number, templates.SourceClientCompanyName, nil)), "fields[0].source"},
			{"company name too short", f(with("a", fieldtype.Text, templates.SourceClientCompanyName, &fieldtype.Options{MaxLength: ptr(100)})), "fields[0].source"},
			{"org number too short", f(with("a", fieldtype.Text, templates.SourceClientOrgNumber, &fieldtype.Options{MaxLength: ptr(49)})), "fields[0].source"},
			{"country as select", f(with("a", fieldtype.Select, templates.SourceClientCountry, &fieldtype.Options{Choices: []string{"NO"}})), "fields[0].source"},
			{"credit limit as text", f(with("a", fieldtype.Text, templates.SourceClientCreditLimit, nil)), "fields[0].source"},
			{"credit limit in JPY", f(with("a", fieldtype.Currency, templates.SourceClientCreditLimit, &fieldtype.Options{Currency: ptr("JPY")})), "fields[0].source"},
			{"credit limit 1 decimal", f(with("a", fieldtype.Number, templates.SourceClientCreditLimit, &fieldtype.Options{Decimals: ptr(1)})), "fields[0].source"},
			{"credit limit with max", f(with("a", fieldtype.Number, templates.SourceClientCreditLimit, &fieldtype.Options{Max: ptr("100")})), "fields[0].source"},
			{"created_at as text", f(with("a", fieldtype.Text, templates.SourceActCreatedAt, nil)), "fields[0].source"},
		}
		for _, c := range cases {
			_, err := s.Create(ctx, c.in)
			if fe := fieldErrors(t, err); len(fe[c.field]) == 0 {
				t.Errorf("%s: errors = %v, want %q", c.name, fe, c.field)
			}
		}
		if _, total, _ := s.List(ctx, templates.Filter{}, page.Request{Page: 1, Limit: 10}); total != 0 {
			t.Fatalf("invalid creates stored %d templates", total)
		}
		// The compatible forms are accepted.
		mustCreate(t, s, ctx, f(
			with("a", fieldtype.Text, templates.SourceClientCompanyName, &fieldtype.Options{MaxLength: ptr(200)}),
			with("b", fieldtype.Text, templates.SourceClientOrgNumber, nil),
			with("c", fieldtype.Text, templates.SourceClientCountry, &fieldtype.Options{MaxLength: ptr(2)}),
			with("d", fieldtype.Currency, templates.SourceClientCreditLimit, &fieldtype.Options{Currency: ptr("JPY"), Decimals: ptr(2)}),
			with("e", fieldtype.Number, templates.SourceClientCreditLimit, &fieldtype.Options{Decimals: ptr(4)}),
			with("g", fieldtype.Number, templates.SourceClientCreditLimit, nil),
			with("h", fieldtype.Date, templates.SourceActCreatedAt, nil),
			with("i", fieldtype.Table, templates.SourceExternalData, &fieldtype.Options{Columns: []fieldtype.Column{
				{Key: "year", Name: "Year", Type: fieldtype.Integer}, {Key: "revenue", Name: "Revenue", Type: fieldtype.Currency, Options: &fieldtype.Options{Currency: ptr("EUR")}}}}),
		))
	})
}

func TestUpdateInPlaceAndVersions(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		s := templates.NewStore(d)
		ctx, _ := testdb.NewTenant(t, d, "acme")
		orig := mustCreate(t, s, ctx, creditReview())

		// Unused: changed in place; field ids survive for kept keys.
		in := creditReview()
		in.Name = "Credit review (rev)"
		in.Fields = append(in.Fields[1:], templates.FieldInput{Key: "notes", Name: "Notes", Type: fieldtype.Text, Source: templates.SourceManual})
		up, created, err := s.Update(ctx, orig.ID, in)
		if err != nil || created {
			t.Fatalf("Update unused: created=%v err=%v", created, err)
		}
		if up.ID != orig.ID || up.Version != 1 || up.Name != in.Name || len(up.Fields) != 6 {
			t.Fatalf("in place: %+v", up)
		}
		if up.Fields[0].ID != orig.Fields[1].ID || up.Fields[0].Position != 0 || up.Fields[5].Key != "notes" || up.Fields[5].ID != 7 {
			t.Fatalf("field ids after in-place change: %s (was %s)", keys(up), keys(orig))
		}
		got, _ := s.Get(ctx, orig.ID)
		if keys(got) != keys(up) || got.Name != in.Name || !got.UpdatedAt.Equal(up.UpdatedAt) {
			t.Fatalf("re-read %s %q, want %s", keys(got), got.Name, keys(up))
		}

		// In use: immutable; a new version.
		useTemplate(t, d.DB, ctx, orig.ID)
		if got, _ := s.Get(ctx, orig.ID); !got.InUse {
			t.Fatal("in_use false after an act used the template")
		}
		in2 := creditReview()
		v2, created, err := s.Update(ctx, orig.ID, in2)
		if err != nil || !created {
			t.Fatalf("Update in use: created=%v err=%v", created, err)
		}
		if v2.ID == orig.ID || v2.Version != 2 || v2.FamilyID != orig.ID || v2.PreviousVersionID == nil || *v2.PreviousVersionID != orig.ID || v2.InUse {
			t.Fatalf("v2 = %+v", v2)
		}
		for _, f := range v2.Fields {
			if f.TemplateID != v2.ID {
				t.Fatalf("v2 field %+v", f)
			}
		}
		old, _ := s.Get(ctx, orig.ID)
		if keys(old) != keys(up) || old.Name != in.Name || old.Version != 1 {
			t.Fatalf("in-use version changed: %s %q", keys(old), old.Name)
		}

		// Identical content: nothing happens, and the answer, which
		// confirms stored state, waits for the durability barrier; when
		// the barrier does not complete, the outcome is unknown.
		var barriers int
		failBarrier := false
		d.SetDurableFault(func(context.Context) error {
			barriers++
			if failBarrier {
				return errors.New("the synchronous standby did not confirm")
			}
			return nil
		})
		t.Cleanup(func() { d.SetDurableFault(nil) })
		same, created, err := s.Update(ctx, orig.ID, in)
		if err != nil || created || same.ID != orig.ID || !same.UpdatedAt.Equal(old.UpdatedAt) {
			t.Fatalf("identical PUT: %+v created=%v err=%v", same, created, err)
		}
		if barriers != 1 {
			t.Fatalf("identical PUT ran %d durability barriers; want 1", barriers)
		}
		failBarrier = true
		if _, _, err := s.Update(ctx, orig.ID, in); !db.IsOutcomeUnknown(err) {
			t.Fatalf("identical PUT whose barrier failed: %v; want an unknown outcome", err)
		}
		d.SetDurableFault(nil)

		// v2 is unused: in place. Changing v1 again branches to version 3.
		in2.Name = "v2 renamed"
		if v, created, err := s.Update(ctx, v2.ID, in2); err != nil || created || v.ID != v2.ID || v.Version != 2 {
			t.Fatalf("PUT v2: %+v %v %v", v, created, err)
		}
		v3, created, err := s.Update(ctx, orig.ID, creditReview())
		if err != nil || !created || v3.Version != 3 || *v3.PreviousVersionID != orig.ID || v3.FamilyID != orig.ID {
			t.Fatalf("v3 = %+v created=%v err=%v", v3, created, err)
		}

		// Invalid content is rejected before anything changes.
		bad := creditReview()
		bad.Fields[1].Key = bad.Fields[0].Key
		if _, _, err := s.Update(ctx, v2.ID, bad); len(fieldErrors(t, err)["fields[1].key"]) == 0 {
			t.Fatalf("duplicate key on update: %v", err)
		}

		list, total, err := s.List(ctx, templates.Filter{}, page.Request{Page: 1, Limit: 10})
		if err != nil || total != 3 || list[0].ID != orig.ID || !list[0].InUse || list[1].InUse || len(list[2].Fields) != 6 {
			t.Fatalf("List = %d, %v", total, err)
		}
	})
}

// TestConcurrentVersions races PUTs on an in-use template: each must get its
// own version number (the family lock), none may fail.
func TestConcurrentVersions(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		s := templates.NewStore(d)
		ctx, _ := testdb.NewTenant(t, d, "acme")
		orig := mustCreate(t, s, ctx, creditReview())
		useTemplate(t, d.DB, ctx, orig.ID)
		const n = 6
		var wg sync.WaitGroup
		versions := make(chan int, n)
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				in := creditReview()
				in.Name = fmt.Sprintf("rev %d", i)
				v, created, err := s.Update(ctx, orig.ID, in)
				if err != nil || !created {
					errs <- fmt.Errorf("PUT %d: created=%v %v", i, created, err)
					return
				}
				versions <- v.Version
			})
		}
		wg.Wait()
		close(versions)
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		seen := map[int]bool{}
		for v := range versions {
			if seen[v] || v < 2 || v > n+1 {
				t.Errorf("version %d duplicated or out of range", v)
			}
			seen[v] = true
		}
	})
}

// TestPutRacesActCreation races an in-place PUT against an act creation
// that reads the template's fields with Get(ctx, tx, id) in its transaction
// and snapshots them. Whatever the interleaving, the act's snapshot must
// match the fields its template has afterwards: either the PUT went first
// (in place; the act sees the new fields) or it saw the act and created a
// version (the act's template keeps the old fields).
func TestPutRacesActCreation(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		s := templates.NewStore(d)
		ctx, tn := testdb.NewTenant(t, d, "acme")
		if err := d.Table("clients").Create(map[string]any{
			"tenant_id": tn.ID, "id": 1, "company_name": "C", "org_number": "1", "country": "NO", "credit_limit": "0",
		}).Error; err != nil {
			t.Fatal(err)
		}
		outcomes := map[bool]int{}
		for round := range 8 {
			tpl := mustCreate(t, s, ctx, creditReview())
			var snapshot string
			var created bool
			var wg sync.WaitGroup
			var actErr, putErr error
			wg.Go(func() {
				actErr = d.Tx(ctx, func(tx *gorm.DB) error {
					got, err := s.GetTx(ctx, tx, tpl.ID)
					if err != nil {
						return err
					}
					snapshot = keys(got)
					seq, err := acts.NextSeq(tx, tn.ID)
					if err != nil {
						return err
					}
					return tx.Table("acts").Create(map[string]any{
						"tenant_id": tn.ID, "uuid": uuid.NewString(), "client_id": 1, "template_id": tpl.ID,
						"title": "t", "status": "draft", "seq": seq,
					}).Error
				})
			})
			wg.Go(func() {
				in := creditReview()
				in.Fields = in.Fields[2:]
				in.Name = fmt.Sprintf("round %d", round)
				_, created, putErr = s.Update(ctx, tpl.ID, in)
			})
			wg.Wait()
			if actErr != nil || putErr != nil {
				t.Fatalf("round %d: act %v, put %v", round, actErr, putErr)
			}
			after, _ := s.Get(ctx, tpl.ID)
			if keys(after) != snapshot {
				t.Fatalf("round %d: act snapshot %s but its template now has %s (created=%v)", round, snapshot, keys(after), created)
			}
			outcomes[created]++
		}
		t.Logf("outcomes: %v", outcomes)
	})
}

// TestListQueryCount: four queries whatever the page size (count, page,
// fields of the page, in-use flags of the page), no N+1.
func TestListQueryCount(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, _ := testdb.NewTenant(t, d, "acme")
		s := templates.NewStore(d)
		for range 30 {
			mustCreate(t, s, ctx, creditReview())
		}
		useTemplate(t, d.DB, ctx, 3)
		counted, count := d.CountQueries()
		cs := templates.NewStore(counted)
		for _, p := range []page.Request{{Page: 1, Limit: 5}, {Page: 1, Limit: 30}, {Page: 2, Limit: 20}} {
			before := count()
			list, total, err := cs.List(ctx, templates.Filter{}, p)
			if err != nil || total != 30 {
				t.Fatal(total, err)
			}
			for _, tpl := range list {
				if len(tpl.Fields) != 6 || tpl.InUse != (tpl.ID == 3) {
					t.Fatalf("template %d: %d fields, in_use %v", tpl.ID, len(tpl.Fields), tpl.InUse)
				}
			}
			if n := count() - before; n != 4 {
				t.Errorf("%+v (%d templates): %d queries, want 4", p, len(list), n)
			}
		}
		before := count()
		if list, total, err := cs.List(ctx, templates.Filter{}, page.Request{Page: 4, Limit: 10}); err != nil || total != 30 || len(list) != 0 {
			t.Fatalf("past the end: %d %d %v", len(list), total, err)
		}
		if n := count() - before; n != 1 {
			t.Errorf("past the end: %d queries, want 1", n)
		}
	})
}
