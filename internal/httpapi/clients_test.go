package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"github.com/finsvc/finsvc/internal/acts"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/money"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
)

var nordic = map[string]any{
	"company_name": "Nordic Timber AS", "org_number": "923456781", "country": "NO", "credit_limit": 250000.00,
}

// wantField fails unless resp is a 400 whose errors name field.
func wantField(t *testing.T, resp *apitest.Response, field string) {
	t.Helper()
	resp.Status(t, http.StatusBadRequest)
	if e := resp.Err(t); len(e.Errors[field]) == 0 {
		t.Fatalf("errors = %v, want errors[%q]", e.Errors, field)
	}
}

func TestClientsCRUD(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		tok := acme.Token(acme.User(auth.RoleMember), auth.ScopeClientsRead, auth.ScopeClientsWrite)

		var c models.Client
		acme.Do("POST", "/api/1.0/clients", tok, nordic).Status(t, http.StatusCreated).Decode(t, &c)
		if c.Id != 1 || c.CompanyName != "Nordic Timber AS" || c.Country != "NO" || c.CreditLimit.String() != "250000" {
			t.Fatalf("created %+v", c)
		}

		var got models.Client
		acme.Do("GET", "/api/1.0/clients/1", tok, nil).Status(t, http.StatusOK).Decode(t, &got)
		if got.Id != 1 || got.OrgNumber != "923456781" || !got.CreatedAt.Equal(c.CreatedAt) {
			t.Fatalf("GET = %+v, want %+v", got, c)
		}

		var up models.Client
		acme.Do("PATCH", "/api/1.0/clients/1", tok, `{"credit_limit": 300000.25}`).Status(t, http.StatusOK).Decode(t, &up)
		if up.CreditLimit.String() != "300000.25" || up.CompanyName != c.CompanyName || up.Country != "NO" {
			t.Fatalf("PATCH = %+v", up)
		}
		acme.Do("PATCH", "/api/1.0/clients/1", tok, `{"company_name": "Nordic Wood AS", "country": "SE"}`).Status(t, http.StatusOK).Decode(t, &up)
		if up.CompanyName != "Nordic Wood AS" || up.Country != "SE" || up.CreditLimit.String() != "300000.25" {
			t.Fatalf("second PATCH = %+v", up)
		}
		acme.Do("GET", "/api/1.0/clients/1", tok, nil).Status(t, http.StatusOK).Decode(t, &got)
		if got.CompanyName != "Nordic Wood AS" || got.CreditLimit.String() != "300000.25" {
			t.Fatalf("after PATCH GET = %+v", got)
		}

		acme.Do("DELETE", "/api/1.0/clients/1", tok, nil).Status(t, http.StatusNoContent)
		acme.Do("GET", "/api/1.0/clients/1", tok, nil).Status(t, http.StatusNotFound)
		acme.Do("DELETE", "/api/1.0/clients/1", tok, nil).Status(t, http.StatusNotFound)
		acme.Do("PATCH", "/api/1.0/clients/1", tok, `{"country": "SE"}`).Status(t, http.StatusNotFound)
	})
}

// TestClientsCreditLimitExact sends amounts float64 cannot hold and expects
// the same digits back, in the JSON number literal, on both dialects.
func TestClientsCreditLimitExact(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		tok := acme.AdminToken()
		for i, v := range []string{"12345678901234567.89", "999999999999999999.99", "0.1", "9007199254740993"} {
			body := fmt.Sprintf(`{"company_name":"A","org_number":"1","country":"NO","credit_limit":%s}`, v)
			resp := acme.Do("POST", "/api/1.0/clients", tok, body).Status(t, http.StatusCreated)
			if !bytes.Contains(resp.Body, []byte(`"credit_limit":`+v+`,`)) && !bytes.Contains(resp.Body, []byte(`"credit_limit":`+v+`}`)) {
				t.Fatalf("POST %s answered %s", v, resp.Body)
			}
			resp = acme.Do("GET", fmt.Sprintf("/api/1.0/clients/%d", i+1), tok, nil).Status(t, http.StatusOK)
			if !bytes.Contains(resp.Body, []byte(`"credit_limit":`+v)) {
				t.Fatalf("GET after POST %s answered %s", v, resp.Body)
			}
			patch := fmt.Sprintf(`{"credit_limit": %s}`, v)
			resp = acme.Do("PATCH", fmt.Sprintf("/api/1.0/clients/%d", i+1), tok, patch).Status(t, http.StatusOK)
			if !bytes.Contains(resp.Body, []byte(`"credit_limit":`+v)) {
				t.Fatalf("PATCH %s answered %s", v, resp.Body)
			}
		}
	})
}

func TestClientsValidation(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		tok := acme.AdminToken()
		with := func(k string, v any) map[string]any {
			m := map[string]any{}
			for kk, vv := range nordic {
				m[kk] = vv
			}
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
			return m
		}
		cases := []struct {
			name  string
			body  any
			field string
		}{
			{"unassigned country", with("country", "XX"), "country"},
			{"user-assigned country", with("country", "XK"), "country"},
			{"lower-case country", with("country", "no"), "country"},
			{"three fractional digits", `{"company_name":"A","org_number":"1","country":"NO","credit_limit":1.005}`, "credit_limit"},
			{"negative limit", with("credit_limit", -1), "credit_limit"},
			{"limit too large", `{"company_name":"A","org_number":"1","country":"NO","credit_limit":1000000000000000000}`, "credit_limit"},
			{"limit as text", with("credit_limit", "lots"), "credit_limit"},
			{"missing name", with("company_name", nil), "company_name"},
			{"blank name", with("company_name", "   "), "company_name"},
			{"empty org number", with("org_number", ""), "org_number"},
			{"unknown property", with("vat", "x"), "body"},
			{"NUL in name", with("company_name", "Nordic\x00"), "company_name"},
			{"invalid UTF-8 in org number", "{\"company_name\":\"A\",\"org_number\":\"1\xff\",\"country\":\"NO\",\"credit_limit\":1}", "org_number"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				wantField(t, acme.Do("POST", "/api/1.0/clients", tok, c.body), c.field)
			})
		}
		// Exponent notation is a JSON number like any other and is read
		// exactly (money.Decimal never goes through float64): 1.5e-3 has
		// three fractional digits, so it is refused on credit_limit.
		wantField(t, acme.Do("POST", "/api/1.0/clients", tok, `{"company_name":"A","org_number":"1","country":"NO","credit_limit":1.5e-3}`), "credit_limit")
		// Anything NUMERIC(20,2) cannot hold exactly is refused, never
		// rounded: tiny values used to be stored as 0 with 201.
		for _, v := range []string{"1e-400", "-1e-400", "1e-320", "1e-5", "0.001", "999999999999999999.995", "1000000000000000000", "1e18", "1e300", "1e400", "1e999", "1e1000"} {
			resp := acme.Do("POST", "/api/1.0/clients", tok, `{"company_name":"A","org_number":"1","country":"NO","credit_limit":`+v+`}`)
			wantField(t, resp, "credit_limit")
			if e := resp.Err(t).Errors["credit_limit"]; strings.Contains(strings.Join(e, " "), "e+18") {
				t.Errorf("%s: message %q", v, e)
			}
		}
		e := acme.Do("POST", "/api/1.0/clients", tok, `{"company_name":"A","org_number":"1","country":"NO","credit_limit":1e300}`).Err(t)
		if got := e.Errors["credit_limit"]; len(got) != 1 || got[0] != "must be at most "+clients.MaxCreditLimit {
			t.Errorf("1e300: %q", got)
		}
		var list models.ClientList
		acme.Do("GET", "/api/1.0/clients", tok, nil).Status(t, http.StatusOK).Decode(t, &list)
		if list.Meta.Total != 0 {
			t.Fatalf("invalid creates stored %d clients", list.Meta.Total)
		}

		acme.Do("POST", "/api/1.0/clients", tok, nordic).Status(t, http.StatusCreated)
		wantField(t, acme.Do("PATCH", "/api/1.0/clients/1", tok, `{"credit_limit": 0.001}`), "credit_limit")
		wantField(t, acme.Do("PATCH", "/api/1.0/clients/1", tok, `{"credit_limit": 1e-400}`), "credit_limit")
		wantField(t, acme.Do("PATCH", "/api/1.0/clients/1", tok, `{"credit_limit": 1e400}`), "credit_limit")
		wantField(t, acme.Do("PATCH", "/api/1.0/clients/1", tok, `{"country": "QQ"}`), "country")
		wantField(t, acme.Do("PATCH", "/api/1.0/clients/1", tok, `{"company_name": ""}`), "company_name")
		acme.Do("PATCH", "/api/1.0/clients/1", tok, `{}`).Status(t, http.StatusBadRequest)
		var c models.Client
		acme.Do("GET", "/api/1.0/clients/1", tok, nil).Status(t, http.StatusOK).Decode(t, &c)
		if c.Country != "NO" || c.CreditLimit.String() != "250000" || c.CompanyName != "Nordic Timber AS" {
			t.Fatalf("rejected PATCH changed the client: %+v", c)
		}
	})
}

func TestClientsPagination(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		tok := acme.Token(acme.User(auth.RoleViewer), auth.ScopeClientsRead)
		seedClients(t, env.DB, acme.Ctx, 30)

		var l models.ClientList
		acme.Do("GET", "/api/1.0/clients", tok, nil).Status(t, http.StatusOK).Decode(t, &l)
		if len(l.Data) != 25 || l.Meta != (models.PageMeta{CurrentPage: 1, PerPage: 25, Total: 30}) || l.Data[0].Id != 1 {
			t.Fatalf("default page: %d items, meta %+v", len(l.Data), l.Meta)
		}
		acme.Do("GET", "/api/1.0/clients?page=2&limit=25", tok, nil).Status(t, http.StatusOK).Decode(t, &l)
		if len(l.Data) != 5 || l.Data[0].Id != 26 || l.Data[4].Id != 30 || l.Meta.CurrentPage != 2 {
			t.Fatalf("page 2: %+v", l)
		}
		// Past the end: 200, empty data, the real total.
		resp := acme.Do("GET", "/api/1.0/clients?page=4&limit=10", tok, nil).Status(t, http.StatusOK).Decode(t, &l)
		if len(l.Data) != 0 || l.Meta != (models.PageMeta{CurrentPage: 4, PerPage: 10, Total: 30}) || !bytes.Contains(resp.Body, []byte(`"data":[]`)) {
			t.Fatalf("past the end: %s", resp.Body)
		}
		acme.Do("GET", "/api/1.0/clients?limit=100", tok, nil).Status(t, http.StatusOK).Decode(t, &l)
		if len(l.Data) != 30 {
			t.Fatalf("limit 100: %d items", len(l.Data))
		}
		wantField(t, acme.Do("GET", "/api/1.0/clients?limit=101", tok, nil), "limit")
		wantField(t, acme.Do("GET", "/api/1.0/clients?limit=0", tok, nil), "limit")
		wantField(t, acme.Do("GET", "/api/1.0/clients?page=abc", tok, nil), "page")
		wantField(t, acme.Do("GET", "/api/1.0/clients?page=0", tok, nil), "page")
		wantField(t, acme.Do("GET", "/api/1.0/clients?page=1.5", tok, nil), "page")
	})
}

// TestClientsTenantIsolation: both tenants hold client 1; only acme holds 2.
func TestClientsTenantIsolation(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme, bravo := env.Tenant("acme"), env.Tenant("bravo")
		ta, tb := acme.AdminToken(), bravo.AdminToken()
		acme.Do("POST", "/api/1.0/clients", ta, nordic).Status(t, http.StatusCreated)
		acme.Do("POST", "/api/1.0/clients", ta, nordic).Status(t, http.StatusCreated)
		var b models.Client
		bravo.Do("POST", "/api/1.0/clients", tb, `{"company_name":"Bravo AB","org_number":"5560000000","country":"SE","credit_limit":1}`).
			Status(t, http.StatusCreated).Decode(t, &b)
		if b.Id != 1 {
			t.Fatalf("bravo's first client id = %d, want 1", b.Id)
		}

		for _, r := range []struct{ method, body string }{{"GET", ""}, {"PATCH", `{"country":"DK"}`}, {"DELETE", ""}} {
			var body any
			if r.body != "" {
				body = r.body
			}
			resp := bravo.Do(r.method, "/api/1.0/clients/2", tb, body).Status(t, http.StatusNotFound)
			if resp.Err(t).Message == "" {
				t.Fatalf("%s: 404 without message", r.method)
			}
		}
		var got models.Client
		bravo.Do("GET", "/api/1.0/clients/1", tb, nil).Status(t, http.StatusOK).Decode(t, &got)
		if got.CompanyName != "Bravo AB" {
			t.Fatalf("bravo's client 1 = %+v", got)
		}
		var l models.ClientList
		bravo.Do("GET", "/api/1.0/clients", tb, nil).Status(t, http.StatusOK).Decode(t, &l)
		if l.Meta.Total != 1 || len(l.Data) != 1 {
			t.Fatalf("bravo sees %d clients", l.Meta.Total)
		}
		acme.Do("GET", "/api/1.0/clients/2", ta, nil).Status(t, http.StatusOK).Decode(t, &got)
		if got.CompanyName != "Nordic Timber AS" || got.Country != "NO" {
			t.Fatalf("bravo's PATCH reached acme: %+v", got)
		}
	})
}

func TestClientsPermissions(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		admin := acme.AdminToken()
		acme.Do("POST", "/api/1.0/clients", admin, nordic).Status(t, http.StatusCreated)

		viewer := acme.Token(acme.User(auth.RoleViewer), auth.AllScopes...)
		member := acme.Token(acme.User(auth.RoleMember), auth.AllScopes...)
		readOnly := acme.Token(acme.User(auth.RoleAdmin), auth.ScopeClientsRead)
		noScope := acme.Token(acme.User(auth.RoleAdmin), auth.ScopeActsRead, auth.ScopeTemplatesRead)

		acme.Do("GET", "/api/1.0/clients", viewer, nil).Status(t, http.StatusOK)
		acme.Do("GET", "/api/1.0/clients/1", viewer, nil).Status(t, http.StatusOK)
		acme.Do("POST", "/api/1.0/clients", viewer, nordic).Status(t, http.StatusForbidden)
		acme.Do("PATCH", "/api/1.0/clients/1", viewer, `{"country":"SE"}`).Status(t, http.StatusForbidden)
		acme.Do("DELETE", "/api/1.0/clients/1", viewer, nil).Status(t, http.StatusForbidden)

		acme.Do("POST", "/api/1.0/clients", readOnly, nordic).Status(t, http.StatusForbidden)
		acme.Do("PATCH", "/api/1.0/clients/1", readOnly, `{"country":"SE"}`).Status(t, http.StatusForbidden)
		acme.Do("DELETE", "/api/1.0/clients/1", readOnly, nil).Status(t, http.StatusForbidden)
		acme.Do("GET", "/api/1.0/clients/1", readOnly, nil).Status(t, http.StatusOK)

		acme.Do("GET", "/api/1.0/clients", noScope, nil).Status(t, http.StatusForbidden)
		acme.Do("GET", "/api/1.0/clients/1", noScope, nil).Status(t, http.StatusForbidden)

		acme.Do("GET", "/api/1.0/clients", "", nil).Status(t, http.StatusUnauthorized)

		acme.Do("POST", "/api/1.0/clients", member, nordic).Status(t, http.StatusCreated)
		acme.Do("PATCH", "/api/1.0/clients/2", member, `{"country":"SE"}`).Status(t, http.StatusOK)
		acme.Do("DELETE", "/api/1.0/clients/2", member, nil).Status(t, http.StatusNoContent)

		var c models.Client
		acme.Do("GET", "/api/1.0/clients/1", admin, nil).Status(t, http.StatusOK).Decode(t, &c)
		if c.Country != "NO" {
			t.Fatalf("a forbidden PATCH changed the client: %+v", c)
		}
	})
}

func TestClientsDeleteRefusedWithActs(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		tok := acme.AdminToken()
		acme.Do("POST", "/api/1.0/clients", tok, nordic).Status(t, http.StatusCreated)
		insertAct(t, env.DB, acme.Ctx, 1, 0)
		wantField(t, acme.Do("DELETE", "/api/1.0/clients/1", tok, nil), "client")
		acme.Do("GET", "/api/1.0/clients/1", tok, nil).Status(t, http.StatusOK)
	})
}

// TestListClientsQueryCount: GET /clients is one COUNT plus one page query,
// whatever the page size (no per-row queries).
func TestListClientsQueryCount(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			d := testdb.Open(t, dialect)
			counted, count := d.CountQueries()
			env := apitest.New(t, apitest.WithDB(d), apitest.WithApp(app.WithDB(counted)))
			acme := env.Tenant("acme")
			tok := acme.Token(acme.User(auth.RoleViewer), auth.ScopeClientsRead)
			seedClients(t, d, acme.Ctx, 250)
			for _, q := range []string{"", "?limit=100", "?page=3&limit=100", "?page=10&limit=25"} {
				before := count()
				var l models.ClientList
				acme.Do("GET", "/api/1.0/clients"+q, tok, nil).Status(t, http.StatusOK).Decode(t, &l)
				if len(l.Data) == 0 || l.Meta.Total != 250 {
					t.Fatalf("%s: %d items of %d", q, len(l.Data), l.Meta.Total)
				}
				if n := count() - before; n != 2 {
					t.Errorf("GET /clients%s (%d rows): %d queries, want 2", q, len(l.Data), n)
				}
			}
		})
	}
}

// BenchmarkListClientsHTTP measures GET /clients end to end (including the
// harness's response validation) over 10,000 clients.
func BenchmarkListClientsHTTP(b *testing.B) {
	for _, dialect := range testdb.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			d := testdb.Open(b, dialect)
			counted, count := d.CountQueries()
			env := apitest.New(b, apitest.WithDB(d), apitest.WithApp(app.WithDB(counted)))
			acme := env.Tenant("acme")
			tok := acme.Token(acme.User(auth.RoleViewer), auth.ScopeClientsRead)
			seedClients(b, d, acme.Ctx, 10_000)
			for _, q := range []string{"?page=1&limit=25", "?page=100&limit=100"} {
				b.Run(q[1:], func(b *testing.B) {
					before := count()
					for b.Loop() {
						acme.Do("GET", "/api/1.0/clients"+q, tok, nil).Status(b, http.StatusOK)
					}
					b.ReportMetric(float64(count()-before)/float64(b.N), "queries/op")
				})
			}
		})
	}
}

func seedClients(tb testing.TB, d *db.DB, ctx context.Context, n int) {
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

// insertAct inserts a bare act of client clientID using template tplID (a
// fresh one-field template when 0), standing in for the acts store.
func insertAct(tb testing.TB, d *db.DB, ctx context.Context, clientID, tplID int64) string {
	tb.Helper()
	tid := tenant.ID(ctx)
	if tplID == 0 {
		id, err := db.NextID(d.DB, tid, "templates")
		if err != nil {
			tb.Fatal(err)
		}
		if err := d.Table("templates").Create(map[string]any{
			"tenant_id": tid, "id": id, "family_id": id, "version": 1, "name": "t",
		}).Error; err != nil {
			tb.Fatal(err)
		}
		tplID = id
	}
	u := uuid.NewString()
	seq, err := acts.NextSeq(d.DB, tid)
	if err != nil {
		tb.Fatal(err)
	}
	if err := d.Table("acts").Create(map[string]any{
		"tenant_id": tid, "uuid": u, "client_id": clientID, "template_id": tplID, "title": "act", "status": "draft", "seq": seq,
	}).Error; err != nil {
		tb.Fatal(err)
	}
	return u
}
