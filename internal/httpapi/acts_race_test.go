package httpapi_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/acts/actstest"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
)

// Creating an act races deleting its client: either the delete wins (204)
// and the act is refused with errors.client_id, or the act wins (201) and
// the delete is refused because the client has acts. Never a 500, never an
// act without its client.
func TestActCreateRaceClientDelete(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		admin := f.Token(f.admin, auth.AllScopes...)
		for i := range 10 {
			c := actstest.Client(t, env.DB, f.Ctx, fmt.Sprint("Doomed ", i))
			var del, create *apitest.Response
			start := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() { <-start; del = f.Do("DELETE", fmt.Sprintf("/api/1.0/clients/%d", c.ID), admin, nil) })
			wg.Go(func() {
				<-start
				create = f.Do("POST", "/api/1.0/acts", f.tok, map[string]any{"client_id": c.ID, "template_id": f.tpl.ID, "title": "x"})
			})
			close(start)
			wg.Wait()
			acts := countRows(t, env, "acts", "tenant_id = ? AND client_id = ?", f.Tenant.ID, c.ID)
			clients := countRows(t, env, "clients", "tenant_id = ? AND id = ?", f.Tenant.ID, c.ID)
			switch {
			case del.Code == http.StatusNoContent && create.Code == http.StatusBadRequest:
				if e := create.Err(t); len(e.Errors["client_id"]) == 0 || acts != 0 || clients != 0 {
					t.Errorf("round %d: delete won, but errors %v, %d acts, %d clients", i, e.Errors, acts, clients)
				}
			case create.Code == http.StatusCreated && del.Code == http.StatusBadRequest:
				if acts != 1 || clients != 1 {
					t.Errorf("round %d: create won, but %d acts, %d clients", i, acts, clients)
				}
			default:
				t.Errorf("round %d: delete %d %s, create %d %s", i, del.Code, del.Body, create.Code, create.Body)
			}
		}
	})
}

// Creating an act races changing its template: the act's data points always
// match the fields of the template version it references, whichever came
// first (a change to a template in use makes a new version).
func TestActCreateRaceTemplateUpdate(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		admin := f.Token(f.admin, auth.AllScopes...)
		for i := range 8 {
			tpl := actstest.Template(t, env.DB, f.Ctx, fmt.Sprint("T", i), actFields[:3]...)
			fields := make([]map[string]any, 3)
			for j, fd := range actFields[:3] {
				fields[j] = map[string]any{"key": fd.Key, "name": fmt.Sprintf("Renamed %d", j), "type": fd.Type, "source": fd.Source, "options": fd.Options}
			}
			var upd, create *apitest.Response
			start := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				<-start
				upd = f.Do("PUT", fmt.Sprintf("/api/1.0/templates/%d", tpl.ID), admin, map[string]any{"name": "Renamed", "fields": fields})
			})
			wg.Go(func() {
				<-start
				create = f.Do("POST", "/api/1.0/acts", f.tok, map[string]any{"client_id": f.client.ID, "template_id": tpl.ID, "title": "x"})
			})
			close(start)
			wg.Wait()
			if create.Code != http.StatusCreated || (upd.Code != http.StatusOK && upd.Code != http.StatusCreated) {
				t.Fatalf("round %d: update %d %s, create %d %s", i, upd.Code, upd.Body, create.Code, create.Body)
			}
			var a models.Act
			create.Decode(t, &a)
			var used models.Template
			f.Do("GET", fmt.Sprintf("/api/1.0/templates/%d", a.TemplateId), admin, nil).Status(t, http.StatusOK).Decode(t, &used)
			for j, d := range a.Data {
				if d.TemplateFieldId != used.Fields[j].Id || d.TemplateFieldName != used.Fields[j].Name {
					t.Errorf("round %d (update %d): data point %d = %d %q, template version %d has %d %q", i, upd.Code, j,
						d.TemplateFieldId, d.TemplateFieldName, used.Version, used.Fields[j].Id, used.Fields[j].Name)
				}
			}
			// In place (200) means the update came first: the act has the new names.
			if upd.Code == http.StatusOK && a.Data[0].TemplateFieldName != "Renamed 0" {
				t.Errorf("round %d: template changed in place, but the act has %q", i, a.Data[0].TemplateFieldName)
			}
		}
	})
}
