package httpapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/acts/actstest"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
)

// Clients filtered by org_number, country and a name prefix,
// alone and combined, with exact totals; another tenant's clients never
// match.
func TestClientListFilters(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		tok := acme.Token(acme.User(auth.RoleMember), auth.ScopeClientsRead, auth.ScopeClientsWrite)
		for _, c := range []struct{ name, org, country string }{
			{"Nordic Timber AS", "923456781", "NO"}, // 1
			{"nordic wood AB", "556000001", "SE"},   // 2
			{"Ørsted AS", "923456781", "DK"},        // 3
			{"ØRN Consulting", "111", "NO"},         // 4
			{"Acme 100%_ AS", "222", "NO"},          // 5
			{"Nord", "333", "NO"},                   // 6
		} {
			acme.Do("POST", "/api/1.0/clients", tok, map[string]any{
				"company_name": c.name, "org_number": c.org, "country": c.country, "credit_limit": 1,
			}).Status(t, http.StatusCreated)
		}
		other := env.Tenant("other")
		otok := other.Token(other.User(auth.RoleMember), auth.ScopeClientsRead, auth.ScopeClientsWrite)
		other.Do("POST", "/api/1.0/clients", otok, map[string]any{
			"company_name": "Nordic Other", "org_number": "923456781", "country": "NO", "credit_limit": 1,
		}).Status(t, http.StatusCreated)

		for _, c := range []struct {
			query string
			total int64
			ids   []int64
		}{
			{"org_number=923456781", 2, []int64{1, 3}},
			{"country=NO", 4, []int64{1, 4, 5, 6}},
			{"country=NO&limit=2&page=2", 4, []int64{5, 6}},
			{"country=FI", 0, nil},
			{"q=nord", 3, []int64{1, 2, 6}},
			{"q=NORDIC", 2, []int64{1, 2}},
			{"q=" + url.QueryEscape("ør"), 2, []int64{3, 4}},
			{"q=" + url.QueryEscape("Ø"), 2, []int64{3, 4}},
			{"q=" + url.QueryEscape("acme 100%_"), 1, []int64{5}},
			{"q=" + url.QueryEscape("acme 1%"), 0, nil},
			{"q=nord&country=NO", 2, []int64{1, 6}},
			{"q=nord&country=NO&limit=1&page=2", 2, []int64{6}},
			{"org_number=923456781&country=DK", 1, []int64{3}},
			{"org_number=" + url.QueryEscape(" 111 "), 1, []int64{4}},
			{"q=nordic&org_number=556000001&country=SE", 1, []int64{2}},
			{"q=x", 0, nil},
			{"country=NO&page=9", 4, nil},
		} {
			var l models.ClientList
			acme.Do("GET", "/api/1.0/clients?"+c.query, tok, nil).Status(t, http.StatusOK).Decode(t, &l)
			var ids []int64
			for _, x := range l.Data {
				ids = append(ids, x.Id)
			}
			if l.Meta.Total != c.total || fmt.Sprint(ids) != fmt.Sprint(c.ids) {
				t.Errorf("%s: ids %v, total %d; want %v, %d", c.query, ids, l.Meta.Total, c.ids, c.total)
			}
		}

		// A rename moves the client in and out of a prefix; a change of
		// country or organisation number moves its totals.
		acme.Do("PATCH", "/api/1.0/clients/6", tok, `{"company_name": "Zeta", "country": "SE", "org_number": "923456781"}`).Status(t, http.StatusOK)
		for q, want := range map[string]int{"q=nord": 2, "q=zet": 1, "country=NO": 3, "country=SE": 2, "org_number=923456781": 3} {
			var l models.ClientList
			acme.Do("GET", "/api/1.0/clients?"+q, tok, nil).Status(t, http.StatusOK).Decode(t, &l)
			if l.Meta.Total != int64(want) || len(l.Data) != want {
				t.Errorf("after the change, %s: %d rows, total %d; want %d", q, len(l.Data), l.Meta.Total, want)
			}
		}
	})
}

// Bad filter values are 400 in the error format, never 500, on both
// dialects.
func TestClientListFilterBadInput(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		tok := acme.Token(acme.User(auth.RoleViewer), auth.ScopeClientsRead)
		for _, q := range []string{
			"q=", "q=" + strings.Repeat("a", 201), "q=a%00b", "q=%0A", "q=%FF%FE",
			"org_number=", "org_number=" + strings.Repeat("1", 51), "org_number=1%002",
			"country=", "country=no", "country=NOR", "country=N%00",
		} {
			resp := acme.Do("GET", "/api/1.0/clients?"+q, tok, nil)
			resp.Status(t, http.StatusBadRequest)
			if e := resp.Err(t); e.Message == "" {
				t.Errorf("%s: error body %+v", q, e)
			}
		}
		acme.Do("GET", "/api/1.0/clients?q="+strings.Repeat("é", 200), tok, nil).Status(t, http.StatusOK)
	})
}

// Acts filtered by template, alone and with client and status, with exact
// totals.
func TestActListTemplateFilter(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		tpl2 := actstest.Template(t, env.DB, f.Ctx, "Second", actFields...)
		other := actstest.Client(t, env.DB, f.Ctx, "Other AB")
		for i := range 5 {
			tpl, client := f.tpl.ID, f.client.ID
			if i%2 == 1 {
				tpl = tpl2.ID
			}
			if i == 4 {
				client = other.ID
			}
			var a models.Act
			f.Do("POST", "/api/1.0/acts", f.tok, map[string]any{"client_id": client, "template_id": tpl, "title": fmt.Sprint("act ", i)}).
				Status(t, http.StatusCreated).Decode(t, &a)
			if i == 0 {
				f.Do("POST", "/api/1.0/acts/"+a.Uuid.String()+"/finalize", f.tok, nil).Status(t, http.StatusOK)
			}
		}
		// Acts 0, 2, 4 use the first template; 1, 3 the second; 4 is the
		// other client's; 0 is final.
		for _, c := range []struct {
			query  string
			titles string
		}{
			{fmt.Sprintf("template_id=%d", f.tpl.ID), "[act 4 act 2 act 0]"},
			{fmt.Sprintf("template_id=%d", tpl2.ID), "[act 3 act 1]"},
			{fmt.Sprintf("template_id=%d&status=draft", f.tpl.ID), "[act 4 act 2]"},
			{fmt.Sprintf("template_id=%d&status=final", tpl2.ID), "[]"},
			{fmt.Sprintf("template_id=%d&client_id=%d", f.tpl.ID, f.client.ID), "[act 2 act 0]"},
			{fmt.Sprintf("template_id=%d&client_id=%d&status=final", f.tpl.ID, f.client.ID), "[act 0]"},
			{fmt.Sprintf("template_id=%d&limit=1&page=2", f.tpl.ID), "[act 2]"},
			{"template_id=999", "[]"},
		} {
			var l models.ActList
			f.Do("GET", "/api/1.0/acts?"+c.query, f.tok, nil).Status(t, http.StatusOK).Decode(t, &l)
			titles := []string{}
			for _, a := range l.Data {
				titles = append(titles, a.Title)
			}
			wantTotal := strings.Count(c.titles, "act")
			if strings.Contains(c.query, "limit=1") {
				wantTotal = 3
			}
			if fmt.Sprint(titles) != c.titles || l.Meta.Total != int64(wantTotal) {
				t.Errorf("%s: %v, total %d; want %s, %d", c.query, titles, l.Meta.Total, c.titles, wantTotal)
			}
		}
		for _, q := range []string{"template_id=0", "template_id=x", "template_id=-1", "template_id=99999999999999999999"} {
			f.Do("GET", "/api/1.0/acts?"+q, f.tok, nil).Status(t, http.StatusBadRequest)
		}
	})
}
