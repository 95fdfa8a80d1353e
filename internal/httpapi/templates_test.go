package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/testdb"
)

const creditReviewJSON = `{
  "name": "Credit review",
  "fields": [
    {"key": "company_name", "name": "Company name", "type": "text", "source": "client.company_name"},
    {"key": "org_number", "name": "Org. number", "type": "text", "source": "client.org_number"},
    {"key": "credit_limit", "name": "Credit limit", "type": "currency", "source": "client.credit_limit", "options": {"currency": "NOK"}},
    {"key": "review_date", "name": "Review date", "type": "date", "source": "act.created_at"},
    {"key": "equity_ratio", "name": "Equity ratio", "type": "percentage", "source": "external_data"},
    {"key": "rating", "name": "Rating", "type": "select", "source": "external_data", "options": {"choices": ["AAA", "AA", "A", "B"]}},
    {"key": "key_figures", "name": "Key figures", "type": "table", "source": "external_data", "options": {"columns": [
      {"key": "year", "name": "Year", "type": "integer"},
      {"key": "revenue", "name": "Revenue", "type": "currency", "options": {"currency": "NOK"}}]}},
    {"key": "analyst_comment", "name": "Analyst comment", "type": "text", "source": "manual", "options": {"max_length": 2000}}
  ]
}`

func oneField(typ, source, options string) string {
	if options == "" {
		options = "null"
	}
	return fmt.Sprintf(`{"name":"T","fields":[{"key":"f","name":"F","type":%q,"source":%q,"options":%s}]}`, typ, source, options)
}

func TestTemplatesCreateGetList(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		admin := acme.AdminToken()
		var tpl models.Template
		acme.Do("POST", "/api/1.0/templates", admin, creditReviewJSON).Status(t, http.StatusCreated).Decode(t, &tpl)
		if tpl.Id != 1 || tpl.Version != 1 || tpl.PreviousVersionId != nil || tpl.InUse || len(tpl.Fields) != 8 {
			t.Fatalf("created %+v", tpl)
		}
		byKey := map[string]models.TemplateField{}
		for _, f := range tpl.Fields {
			byKey[f.Key] = f
		}
		if f := byKey["equity_ratio"]; !f.ExternalDataField || f.Options != nil || f.Type != models.FieldTypePercentage {
			t.Errorf("equity_ratio = %+v", f)
		}
		if f := byKey["company_name"]; f.ExternalDataField || f.Options == nil || *f.Options.MaxLength != 10000 {
			t.Errorf("company_name = %+v (want effective max_length)", f)
		}
		if f := byKey["credit_limit"]; *f.Options.Currency != "NOK" || *f.Options.Decimals != 2 || f.Source != models.SourceClientCreditLimit {
			t.Errorf("credit_limit = %+v", f)
		}
		if f := byKey["key_figures"]; !f.ExternalDataField || len(*f.Options.Columns) != 2 || *(*f.Options.Columns)[1].Options.Decimals != 2 {
			t.Errorf("key_figures = %+v", f)
		}
		if tpl.Fields[0].Key != "company_name" || tpl.Fields[7].Key != "analyst_comment" {
			t.Error("fields not in the order given")
		}

		var got models.Template
		acme.Do("GET", "/api/1.0/templates/1", admin, nil).Status(t, http.StatusOK).Decode(t, &got)
		a, _ := json.Marshal(tpl)
		b, _ := json.Marshal(got)
		if string(a) != string(b) {
			t.Fatalf("GET differs from POST:\n%s\n%s", b, a)
		}
		acme.Do("GET", "/api/1.0/templates/2", admin, nil).Status(t, http.StatusNotFound)

		viewer := acme.Token(acme.User(auth.RoleViewer), auth.ScopeTemplatesRead)
		for i := 0; i < 4; i++ {
			acme.Do("POST", "/api/1.0/templates", admin, oneField("integer", "manual", "")).Status(t, http.StatusCreated)
		}
		var l models.TemplateList
		acme.Do("GET", "/api/1.0/templates?limit=2", viewer, nil).Status(t, http.StatusOK).Decode(t, &l)
		if l.Meta != (models.PageMeta{CurrentPage: 1, PerPage: 2, Total: 5}) || len(l.Data) != 2 || len(l.Data[0].Fields) != 8 || len(l.Data[1].Fields) != 1 {
			t.Fatalf("list: %+v", l.Meta)
		}
		acme.Do("GET", "/api/1.0/templates?page=3&limit=2", viewer, nil).Status(t, http.StatusOK).Decode(t, &l)
		if len(l.Data) != 1 || l.Data[0].Id != 5 {
			t.Fatalf("page 3: %+v", l)
		}
		acme.Do("GET", "/api/1.0/templates?page=4&limit=2", viewer, nil).Status(t, http.StatusOK).Decode(t, &l)
		if len(l.Data) != 0 || l.Meta.Total != 5 {
			t.Fatalf("past the end: %+v", l)
		}
		wantField(t, acme.Do("GET", "/api/1.0/templates?limit=101", viewer, nil), "limit")
		wantField(t, acme.Do("GET", "/api/1.0/templates?page=abc", viewer, nil), "page")
		wantField(t, acme.Do("GET", "/api/1.0/templates?page=-1", viewer, nil), "page")
	})
}

// TestTemplateFieldOptions posts one field of each type with valid and
// invalid options; invalid ones are 400 naming the option.
func TestTemplateFieldOptions(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		admin := acme.AdminToken()
		valid := []struct{ typ, options string }{
			{"text", ""},
			{"text", `{"max_length": 100}`},
			{"number", ""},
			{"number", `{"decimals": 2, "min": "0", "max": "100.50"}`},
			{"integer", ""},
			{"currency", `{"currency": "EUR"}`},
			{"currency", `{"currency": "JPY"}`},
			{"currency", `{"currency": "EUR", "decimals": 4}`},
			{"percentage", ""},
			{"boolean", ""},
			{"date", ""},
			{"select", `{"choices": ["Low", "Medium", "High"]}`},
			{"table", `{"columns": [{"key": "year", "name": "Year", "type": "integer"}, {"key": "amount", "name": "Amount", "type": "currency", "options": {"currency": "SEK"}}, {"key": "ok", "name": "OK", "type": "boolean"}]}`},
		}
		for _, c := range valid {
			t.Run("valid "+c.typ+" "+c.options, func(t *testing.T) {
				var tpl models.Template
				acme.Do("POST", "/api/1.0/templates", admin, oneField(c.typ, "manual", c.options)).Status(t, http.StatusCreated).Decode(t, &tpl)
				if string(tpl.Fields[0].Type) != c.typ {
					t.Fatalf("type %s stored as %s", c.typ, tpl.Fields[0].Type)
				}
			})
		}
		invalid := []struct{ typ, options, field string }{
			{"text", `{"max_length": 0}`, "fields[0].options.max_length"},
			{"text", `{"max_length": 20000}`, "fields[0].options.max_length"},
			{"text", `{"decimals": 2}`, "fields[0].options.decimals"},
			{"number", `{"min": "10", "max": "1"}`, "fields[0].options.min"},
			{"number", `{"decimals": 2, "min": "1.234"}`, "fields[0].options.min"},
			{"number", `{"currency": "EUR"}`, "fields[0].options.currency"},
			{"number", `{"min": "1e3"}`, "fields[0].options.min"},
			{"integer", `{"max_length": 5}`, "fields[0].options.max_length"},
			{"currency", "", "fields[0].options.currency"},
			{"currency", `{"currency": "ABC"}`, "fields[0].options.currency"},
			{"currency", `{"currency": "eur"}`, "fields[0].options.currency"},
			{"currency", `{"currency": "EUR", "decimals": 11}`, "fields[0].options.decimals"},
			{"percentage", `{"max_length": 3}`, "fields[0].options.max_length"},
			{"boolean", `{"choices": ["yes"]}`, "fields[0].options.choices"},
			{"date", `{"min": "2020"}`, "fields[0].options.min"},
			{"select", "", "fields[0].options.choices"},
			{"select", `{"choices": []}`, "fields[0].options.choices"},
			{"select", `{"choices": ["A", "A"]}`, "fields[0].options.choices[1]"},
			{"select", `{"choices": [" A"]}`, "fields[0].options.choices[0]"},
			{"table", "", "fields[0].options.columns"},
			{"table", `{"columns": [{"key": "a", "name": "A", "type": "table"}]}`, "fields[0].options.columns[0].type"},
			{"table", `{"columns": [{"key": "a", "name": "A", "type": "text"}, {"key": "a", "name": "B", "type": "text"}]}`, "fields[0].options.columns[1].key"},
			{"table", `{"columns": [{"key": "a", "name": "A", "type": "currency"}]}`, "fields[0].options.columns[0].options.currency"},
			{"table", `{"columns": [{"key": "A", "name": "A", "type": "text"}]}`, "fields[0].options.columns[0].key"},
			{"money", "", "fields[0].type"},
			{"text", `{"colour": "red"}`, "fields[0].options.colour"},
		}
		for _, c := range invalid {
			t.Run("invalid "+c.typ+" "+c.options, func(t *testing.T) {
				resp := acme.Do("POST", "/api/1.0/templates", admin, oneField(c.typ, "manual", c.options)).Status(t, http.StatusBadRequest)
				if e := resp.Err(t); len(e.Errors[c.field]) == 0 && !(c.field == "fields[0].options.colour" && len(e.Errors["fields[0].options"]) > 0) {
					t.Fatalf("errors = %v, want %q", e.Errors, c.field)
				}
			})
		}
		var l models.TemplateList
		acme.Do("GET", "/api/1.0/templates?limit=100", admin, nil).Status(t, http.StatusOK).Decode(t, &l)
		if l.Meta.Total != int64(len(valid)) {
			t.Fatalf("%d templates stored, want the %d valid ones", l.Meta.Total, len(valid))
		}
	})
}

func TestTemplateKeysAndSources(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		admin := acme.AdminToken()
		dup := `{"name":"T","fields":[
		  {"key":"a","name":"A","type":"text","source":"manual"},
		  {"key":"b","name":"B","type":"text","source":"manual"},
		  {"key":"a","name":"C","type":"integer","source":"external_data"}]}`
		wantField(t, acme.Do("POST", "/api/1.0/templates", admin, dup), "fields[2].key")
		wantField(t, acme.Do("POST", "/api/1.0/templates", admin, `{"name":"T","fields":[]}`), "fields")
		wantField(t, acme.Do("POST", "/api/1.0/templates", admin, `{"name":"","fields":[{"key":"a","name":"A","type":"text","source":"manual"}]}`), "name")
		wantField(t, acme.Do("POST", "/api/1.0/templates", admin, `{"name":"T","fields":[{"key":"Bad Key","name":"A","type":"text","source":"manual"}]}`), "fields[0].key")

		for _, c := range []struct{ typ, source, options string }{
			{"number", "client.company_name", ""},
			{"text", "client.company_name", `{"max_length": 50}`},
			{"integer", "client.org_number", ""},
			{"date", "client.country", ""},
			{"text", "client.credit_limit", ""},
			{"percentage", "client.credit_limit", ""},
			{"currency", "client.credit_limit", `{"currency": "JPY"}`},
			{"number", "client.credit_limit", `{"decimals": 0}`},
			{"number", "client.credit_limit", `{"min": "0"}`},
			{"text", "act.created_at", ""},
			{"table", "act.created_at", `{"columns": [{"key": "a", "name": "A", "type": "date"}]}`},
		} {
			t.Run(c.source+" as "+c.typ+" "+c.options, func(t *testing.T) {
				wantField(t, acme.Do("POST", "/api/1.0/templates", admin, oneField(c.typ, c.source, c.options)), "fields[0].source")
			})
		}
		wantField(t, acme.Do("POST", "/api/1.0/templates", admin, oneField("text", "client.email", "")), "fields[0].source")

		for _, c := range []struct{ typ, source, options string }{
			{"text", "client.country", ""},
			{"number", "client.credit_limit", `{"decimals": 2}`},
			{"currency", "client.credit_limit", `{"currency": "JPY", "decimals": 2}`},
			{"date", "act.created_at", ""},
			{"table", "external_data", `{"columns": [{"key": "a", "name": "A", "type": "date"}]}`},
			{"boolean", "external_data", ""},
		} {
			var tpl models.Template
			acme.Do("POST", "/api/1.0/templates", admin, oneField(c.typ, c.source, c.options)).Status(t, http.StatusCreated).Decode(t, &tpl)
			if tpl.Fields[0].ExternalDataField != (c.source == "external_data") {
				t.Errorf("%s: external_data_field = %v", c.source, tpl.Fields[0].ExternalDataField)
			}
		}
	})
}

func TestTemplatesUpdate(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		admin := acme.AdminToken()
		var v1 models.Template
		acme.Do("POST", "/api/1.0/templates", admin, creditReviewJSON).Status(t, http.StatusCreated).Decode(t, &v1)

		// Unused: 200, same id and version, new content.
		changed := `{"name":"Credit review","fields":[
		  {"key":"company_name","name":"Company","type":"text","source":"client.company_name"},
		  {"key":"score","name":"Score","type":"integer","source":"external_data"}]}`
		var up models.Template
		acme.Do("PUT", "/api/1.0/templates/1", admin, changed).Status(t, http.StatusOK).Decode(t, &up)
		if up.Id != 1 || up.Version != 1 || len(up.Fields) != 2 || up.Fields[0].Id != v1.Fields[0].Id || up.Fields[1].Key != "score" {
			t.Fatalf("in place: %+v", up)
		}

		// In use: 201 with a new version; version 1 stays as it was.
		acme.Do("POST", "/api/1.0/clients", admin, nordic).Status(t, http.StatusCreated)
		insertAct(t, env.DB, acme.Ctx, 1, 1)
		acme.Do("GET", "/api/1.0/templates/1", admin, nil).Status(t, http.StatusOK).Decode(t, &up)
		if !up.InUse {
			t.Fatal("in_use false with an act")
		}
		var v2 models.Template
		acme.Do("PUT", "/api/1.0/templates/1", admin, creditReviewJSON).Status(t, http.StatusCreated).Decode(t, &v2)
		if v2.Id == 1 || v2.Version != 2 || v2.PreviousVersionId == nil || *v2.PreviousVersionId != 1 || v2.InUse || len(v2.Fields) != 8 {
			t.Fatalf("new version: %+v", v2)
		}
		var old models.Template
		acme.Do("GET", "/api/1.0/templates/1", admin, nil).Status(t, http.StatusOK).Decode(t, &old)
		if len(old.Fields) != 2 || old.Fields[1].Key != "score" || old.Version != 1 {
			t.Fatalf("version 1 changed: %+v", old)
		}
		// The same content again: nothing to change, 200, no version.
		acme.Do("PUT", "/api/1.0/templates/1", admin, changed).Status(t, http.StatusOK).Decode(t, &up)
		if up.Id != 1 {
			t.Fatalf("identical PUT answered %+v", up)
		}
		var l models.TemplateList
		acme.Do("GET", "/api/1.0/templates", admin, nil).Status(t, http.StatusOK).Decode(t, &l)
		if l.Meta.Total != 2 || !l.Data[0].InUse || l.Data[1].InUse {
			t.Fatalf("list after versioning: %+v", l)
		}

		// Invalid content: 400, nothing changes.
		wantField(t, acme.Do("PUT", "/api/1.0/templates/2", admin, oneField("currency", "manual", "")), "fields[0].options.currency")
		acme.Do("GET", "/api/1.0/templates/2", admin, nil).Status(t, http.StatusOK).Decode(t, &up)
		if len(up.Fields) != 8 {
			t.Fatalf("rejected PUT changed the template: %+v", up)
		}
		acme.Do("PUT", "/api/1.0/templates/99", admin, changed).Status(t, http.StatusNotFound)
	})
}

// TestTemplatesTenantIsolation: both tenants hold template 1; only acme
// holds 2.
func TestTemplatesTenantIsolation(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme, bravo := env.Tenant("acme"), env.Tenant("bravo")
		ta, tb := acme.AdminToken(), bravo.AdminToken()
		acme.Do("POST", "/api/1.0/templates", ta, creditReviewJSON).Status(t, http.StatusCreated)
		acme.Do("POST", "/api/1.0/templates", ta, creditReviewJSON).Status(t, http.StatusCreated)
		var b models.Template
		bravo.Do("POST", "/api/1.0/templates", tb, oneField("boolean", "manual", "")).Status(t, http.StatusCreated).Decode(t, &b)
		if b.Id != 1 {
			t.Fatalf("bravo's template id = %d", b.Id)
		}
		bravo.Do("GET", "/api/1.0/templates/2", tb, nil).Status(t, http.StatusNotFound)
		bravo.Do("PUT", "/api/1.0/templates/2", tb, oneField("date", "manual", "")).Status(t, http.StatusNotFound)
		var got models.Template
		bravo.Do("GET", "/api/1.0/templates/1", tb, nil).Status(t, http.StatusOK).Decode(t, &got)
		if got.Name != "T" || len(got.Fields) != 1 {
			t.Fatalf("bravo's template 1 = %+v", got)
		}
		acme.Do("GET", "/api/1.0/templates/2", ta, nil).Status(t, http.StatusOK).Decode(t, &got)
		if len(got.Fields) != 8 {
			t.Fatalf("acme's template 2 changed: %+v", got)
		}
	})
}

func TestTemplatesPermissions(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		admin := acme.AdminToken()
		acme.Do("POST", "/api/1.0/templates", admin, creditReviewJSON).Status(t, http.StatusCreated)

		member := acme.Token(acme.User(auth.RoleMember), auth.AllScopes...)
		viewer := acme.Token(acme.User(auth.RoleViewer), auth.AllScopes...)
		adminNoWrite := acme.Token(acme.User(auth.RoleAdmin), auth.ScopeTemplatesRead)
		adminNoRead := acme.Token(acme.User(auth.RoleAdmin), auth.ScopeClientsRead)

		acme.Do("POST", "/api/1.0/templates", member, creditReviewJSON).Status(t, http.StatusForbidden)
		acme.Do("PUT", "/api/1.0/templates/1", member, creditReviewJSON).Status(t, http.StatusForbidden)
		acme.Do("POST", "/api/1.0/templates", viewer, creditReviewJSON).Status(t, http.StatusForbidden)
		acme.Do("POST", "/api/1.0/templates", adminNoWrite, creditReviewJSON).Status(t, http.StatusForbidden)
		acme.Do("PUT", "/api/1.0/templates/1", adminNoWrite, oneField("date", "manual", "")).Status(t, http.StatusForbidden)
		acme.Do("GET", "/api/1.0/templates", adminNoRead, nil).Status(t, http.StatusForbidden)
		acme.Do("GET", "/api/1.0/templates/1", adminNoRead, nil).Status(t, http.StatusForbidden)

		acme.Do("GET", "/api/1.0/templates", member, nil).Status(t, http.StatusOK)
		acme.Do("GET", "/api/1.0/templates/1", viewer, nil).Status(t, http.StatusOK)
		acme.Do("GET", "/api/1.0/templates/1", "", nil).Status(t, http.StatusUnauthorized)

		var l models.TemplateList
		acme.Do("GET", "/api/1.0/templates", admin, nil).Status(t, http.StatusOK).Decode(t, &l)
		if l.Meta.Total != 1 || len(l.Data[0].Fields) != 8 {
			t.Fatalf("a forbidden write changed templates: %+v", l.Meta)
		}
	})
}

// TestListTemplatesQueryCount: GET /templates is four queries whatever the
// page size (count, page, the page's fields, the page's in-use flags).
func TestListTemplatesQueryCount(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			d := testdb.Open(t, dialect)
			counted, count := d.CountQueries()
			env := apitest.New(t, apitest.WithDB(d), apitest.WithApp(app.WithDB(counted)))
			acme := env.Tenant("acme")
			admin := acme.AdminToken()
			for range 12 {
				acme.Do("POST", "/api/1.0/templates", admin, creditReviewJSON).Status(t, http.StatusCreated)
			}
			for _, q := range []string{"?limit=3", "?limit=12", "?page=2&limit=5"} {
				before := count()
				var l models.TemplateList
				acme.Do("GET", "/api/1.0/templates"+q, admin, nil).Status(t, http.StatusOK).Decode(t, &l)
				if n := count() - before; n != 4 {
					t.Errorf("GET /templates%s (%d templates): %d queries, want 4", q, len(l.Data), n)
				}
			}
		})
	}
}
