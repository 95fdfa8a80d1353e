package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
)

// Deleting a client or an act leaves a tombstone that GET /deleted/…
// lists after deleted_since, oldest first, with stamps in commit order; the
// row leaves the updated_since changes; another tenant sees none of it.
func TestTombstones(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		ctok := f.Token(f.member, auth.ScopeClientsRead, auth.ScopeClientsWrite)
		for i := range 3 {
			f.Do("POST", "/api/1.0/clients", ctok, map[string]any{
				"company_name": fmt.Sprint("Gone ", i), "org_number": "1", "country": "NO", "credit_limit": 1,
			}).Status(t, http.StatusCreated)
		}
		epoch := time.Unix(0, 0)
		var dl models.DeletedClientList
		f.Do("GET", "/api/1.0/deleted/clients?deleted_since="+since(epoch), ctok, nil).Status(t, http.StatusOK).Decode(t, &dl)
		if dl.Meta.Total != 0 || len(dl.Data) != 0 {
			t.Fatalf("before any deletion = %+v", dl)
		}
		f.Do("DELETE", "/api/1.0/clients/3", ctok, nil).Status(t, http.StatusNoContent)
		f.Do("DELETE", "/api/1.0/clients/2", ctok, nil).Status(t, http.StatusNoContent)
		f.Do("GET", "/api/1.0/deleted/clients?limit=1", ctok, nil).Status(t, http.StatusOK).Decode(t, &dl)
		if dl.Meta.Total != 2 || len(dl.Data) != 1 || dl.Data[0].Id != 3 {
			t.Fatalf("first tombstone = %+v", dl)
		}
		first := dl.Data[0].DeletedAt
		f.Do("GET", "/api/1.0/deleted/clients?deleted_since="+since(first), ctok, nil).Status(t, http.StatusOK).Decode(t, &dl)
		if dl.Meta.Total != 1 || dl.Data[0].Id != 2 || !dl.Data[0].DeletedAt.After(first) {
			t.Fatalf("after the first = %+v", dl)
		}
		var cl models.ClientList
		f.Do("GET", "/api/1.0/clients?updated_since="+since(epoch), ctok, nil).Status(t, http.StatusOK).Decode(t, &cl)
		if cl.Meta.Total != 2 || cl.Data[0].Id != 1 || cl.Data[1].Id != 4 {
			t.Fatalf("changes after the deletions = %+v", cl)
		}
		// A client with acts is not deleted and leaves no tombstone.
		f.createAct(t, "keeps its client")
		f.Do("DELETE", fmt.Sprint("/api/1.0/clients/", f.client.ID), ctok, nil).Status(t, http.StatusBadRequest)

		a := f.createAct(t, "to delete")
		f.Do("DELETE", "/api/1.0/acts/"+a.Uuid.String(), f.tok, nil).Status(t, http.StatusNoContent)
		var al models.DeletedActList
		f.Do("GET", "/api/1.0/deleted/acts?deleted_since="+since(epoch), f.tok, nil).Status(t, http.StatusOK).Decode(t, &al)
		if al.Meta.Total != 1 || al.Data[0].Uuid != a.Uuid || al.Data[0].ClientId != f.client.ID || !al.Data[0].DeletedAt.After(a.UpdatedAt) {
			t.Fatalf("deleted acts = %+v", al)
		}
		f.Do("GET", "/api/1.0/deleted/acts?deleted_since="+since(al.Data[0].DeletedAt), f.tok, nil).Status(t, http.StatusOK).Decode(t, &al)
		if al.Meta.Total != 0 || len(al.Data) != 0 {
			t.Fatalf("after the last deletion = %+v", al)
		}

		other := env.Tenant("other")
		otok := other.Token(other.User(auth.RoleViewer), auth.ScopeClientsRead, auth.ScopeActsRead)
		other.Do("GET", "/api/1.0/deleted/clients", otok, nil).Status(t, http.StatusOK).Decode(t, &dl)
		other.Do("GET", "/api/1.0/deleted/acts", otok, nil).Status(t, http.StatusOK).Decode(t, &al)
		if dl.Meta.Total != 0 || al.Meta.Total != 0 {
			t.Fatalf("another tenant sees %d, %d tombstones", dl.Meta.Total, al.Meta.Total)
		}
		for _, path := range []string{"/api/1.0/deleted/clients", "/api/1.0/deleted/acts"} {
			for _, v := range []string{"", "yesterday", "2026-01-01", "2026-01-01T25:00:00Z"} {
				other.Do("GET", path+"?deleted_since="+v, otok, nil).Status(t, http.StatusBadRequest)
			}
			other.Do("GET", path+"?limit=101", otok, nil).Status(t, http.StatusBadRequest)
		}
	})
}
