package httpapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
)

func since(t time.Time) string { return url.QueryEscape(t.Format(time.RFC3339Nano)) }

// updated_since on clients, acts and templates: the changes
// after the time, oldest first, each with its own updated_at; following
// the spec's recipe (page 1, then the last updated_at seen) returns each
// change once, and a later change of a row brings it back.
func TestIncrementalSync(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		ctok := f.Token(f.member, auth.ScopeClientsRead, auth.ScopeClientsWrite)
		for i := range 5 {
			f.Do("POST", "/api/1.0/clients", ctok, map[string]any{
				"company_name": fmt.Sprint("Sync ", i), "org_number": fmt.Sprint(100 + i), "country": []string{"NO", "SE"}[i%2], "credit_limit": 1,
			}).Status(t, http.StatusCreated)
		}
		// The fixture's client (id 1) came first; ours are 2..6.
		syncClients := func(from time.Time) (ids []int64, last time.Time) {
			t.Helper()
			last = from
			for {
				var l models.ClientList
				f.Do("GET", "/api/1.0/clients?limit=2&updated_since="+since(last), ctok, nil).Status(t, http.StatusOK).Decode(t, &l)
				if len(l.Data) == 0 {
					return ids, last
				}
				if l.Meta.Total < int64(len(l.Data)) {
					t.Fatalf("total %d below %d rows", l.Meta.Total, len(l.Data))
				}
				for _, c := range l.Data {
					if !c.UpdatedAt.After(last) {
						t.Fatalf("client %d at %s, not after %s", c.Id, c.UpdatedAt, last)
					}
					ids, last = append(ids, c.Id), c.UpdatedAt
				}
			}
		}
		ids, cursor := syncClients(time.Unix(0, 0))
		if fmt.Sprint(ids) != "[1 2 3 4 5 6]" {
			t.Fatalf("first sync = %v", ids)
		}
		f.Do("PATCH", "/api/1.0/clients/3", ctok, `{"credit_limit": 2}`).Status(t, http.StatusOK)
		f.Do("PATCH", "/api/1.0/clients/2", ctok, `{"company_name": "Renamed"}`).Status(t, http.StatusOK)
		if ids, _ := syncClients(cursor); fmt.Sprint(ids) != "[3 2]" {
			t.Fatalf("second sync = %v, want the two changes in order", ids)
		}
		var l models.ClientList
		f.Do("GET", "/api/1.0/clients?country=SE&updated_since="+since(cursor), ctok, nil).Status(t, http.StatusOK).Decode(t, &l)
		if l.Meta.Total != 1 || len(l.Data) != 1 || l.Data[0].Id != 3 {
			t.Fatalf("changed Swedish clients = %+v", l)
		}
		f.Do("GET", "/api/1.0/clients?page=2&limit=1&updated_since="+since(cursor), ctok, nil).Status(t, http.StatusOK).Decode(t, &l)
		if l.Meta.Total != 2 || len(l.Data) != 1 || l.Data[0].Id != 2 {
			t.Fatalf("page 2 of the changes = %+v", l)
		}

		// Acts: a title change and a finalization each bring
		// the act back.
		a1, a2 := f.createAct(t, "one"), f.createAct(t, "two")
		var al models.ActList
		f.Do("GET", "/api/1.0/acts?updated_since="+since(time.Unix(0, 0)), f.tok, nil).Status(t, http.StatusOK).Decode(t, &al)
		if al.Meta.Total != 2 || len(al.Data) != 2 || al.Data[0].Uuid != a1.Uuid || !al.Data[1].UpdatedAt.After(al.Data[0].UpdatedAt) {
			t.Fatalf("acts since the epoch = %+v", al)
		}
		cur := al.Data[1].UpdatedAt
		f.Do("PATCH", "/api/1.0/acts/"+a2.Uuid.String(), f.tok, `{"title": "two, again"}`).Status(t, http.StatusOK)
		f.Do("POST", "/api/1.0/acts/"+a1.Uuid.String()+"/finalize", f.tok, nil).Status(t, http.StatusOK)
		f.Do("GET", "/api/1.0/acts?limit=1&updated_since="+since(cur), f.tok, nil).Status(t, http.StatusOK).Decode(t, &al)
		if al.Meta.Total != 2 || al.Data[0].Uuid != a2.Uuid || al.Data[0].Title != "two, again" {
			t.Fatalf("changed acts, page 1 = %+v", al)
		}
		f.Do("GET", "/api/1.0/acts?limit=1&updated_since="+since(al.Data[0].UpdatedAt), f.tok, nil).Status(t, http.StatusOK).Decode(t, &al)
		if al.Meta.Total != 1 || al.Data[0].Uuid != a1.Uuid || al.Data[0].Status != models.ActStatusFinal {
			t.Fatalf("changed acts after the first = %+v", al)
		}
		f.Do("GET", "/api/1.0/acts?status=draft&updated_since="+since(cur), f.tok, nil).Status(t, http.StatusOK).Decode(t, &al)
		if al.Meta.Total != 1 || al.Data[0].Uuid != a2.Uuid {
			t.Fatalf("changed drafts = %+v", al)
		}

		// Templates.
		admin := f.AdminToken()
		var tl models.TemplateList
		f.Do("GET", "/api/1.0/templates?updated_since="+since(time.Unix(0, 0)), admin, nil).Status(t, http.StatusOK).Decode(t, &tl)
		if tl.Meta.Total != 1 || len(tl.Data) != 1 {
			t.Fatalf("templates since the epoch = %+v", tl)
		}
		tcur := tl.Data[0].UpdatedAt
		var created models.Template
		f.Do("POST", "/api/1.0/templates", admin, oneField("text", "manual", "")).Status(t, http.StatusCreated).Decode(t, &created)
		f.Do("GET", "/api/1.0/templates?updated_since="+since(tcur), admin, nil).Status(t, http.StatusOK).Decode(t, &tl)
		if tl.Meta.Total != 1 || tl.Data[0].Id != created.Id || !tl.Data[0].UpdatedAt.Equal(created.UpdatedAt) {
			t.Fatalf("templates changed since = %+v", tl)
		}
		f.Do("GET", "/api/1.0/templates?updated_since="+since(created.UpdatedAt), admin, nil).Status(t, http.StatusOK).Decode(t, &tl)
		if tl.Meta.Total != 0 || len(tl.Data) != 0 {
			t.Fatalf("templates after the last change = %+v", tl)
		}
	})
}

// A malformed updated_since is 400 in the error format on every list and
// both dialects; any valid RFC 3339 time, with an offset or fractions
// beyond microseconds, is accepted.
func TestIncrementalSyncBadInput(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		tok := acme.Token(acme.User(auth.RoleViewer), auth.ScopeClientsRead, auth.ScopeActsRead, auth.ScopeTemplatesRead)
		for _, list := range []string{"clients", "acts", "templates"} {
			for _, v := range []string{"", "yesterday", "2026-01-01", "2026-13-01T00:00:00Z", "2026-01-01T00:00:00", "2026-01-01T00:00:00Z%00", "1"} {
				resp := acme.Do("GET", "/api/1.0/"+list+"?updated_since="+v, tok, nil)
				resp.Status(t, http.StatusBadRequest)
				if e := resp.Err(t); e.Message == "" {
					t.Errorf("%s updated_since=%q: %+v", list, v, e)
				}
			}
			for _, v := range []string{"2026-01-01T00:00:00%2B02:00", "2026-01-01T00:00:00.123456789Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"} {
				acme.Do("GET", "/api/1.0/"+list+"?updated_since="+v, tok, nil).Status(t, http.StatusOK)
			}
		}
	})
}
