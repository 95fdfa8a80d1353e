package console_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/acts/actstest"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/fieldtype"
	"github.com/finsvc/finsvc/internal/oauth/store"
	"github.com/finsvc/finsvc/internal/templates"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

func sp(s string) *string { return &s }

// fetchedAct makes an act whose fetch request has one field accepted, one
// failed and one still awaiting, through the API.
func fetchedAct(t *testing.T, env *apitest.Env, o *org) models.Act {
	t.Helper()
	cl := actstest.Client(t, env.DB, o.Ctx, "Acme AB")
	tpl := actstest.Template(t, env.DB, o.Ctx, "Credit review",
		actstest.F{Key: "revenue", Type: "currency", Source: templates.SourceExternalData, Options: &fieldtype.Options{Currency: sp("SEK")}},
		actstest.F{Key: "rating", Type: "select", Source: templates.SourceExternalData, Options: &fieldtype.Options{Choices: []string{"A", "B", "C"}}},
		actstest.F{Key: "employees", Type: "integer", Source: templates.SourceExternalData},
		actstest.F{Key: "note", Type: "text", Source: templates.SourceManual},
	)
	actstest.Webhook(t, env.DB, o.Ctx, o.member.id, outbox.ActFetchData, "https://integration.example.com/hook")
	// The app of the test tokens (apitest's "test-app"), registered so
	// that the act page can name it.
	now := time.Now()
	if err := env.DB.Create(&store.Client{TenantID: o.Tenant.ID, ID: "test-app", Name: "Ledger sync", SecretHash: "-", RedirectURIs: "[]",
		CreatedAt: now, UpdatedAt: now}).Error; err != nil {
		t.Fatal(err)
	}
	var a models.Act
	o.Do("POST", "/api/1.0/acts", o.member.token, map[string]any{"client_id": cl.ID, "template_id": tpl.ID, "title": "Review <2026>"}).
		Status(t, http.StatusCreated).Decode(t, &a)
	id := map[string]int64{}
	for _, dp := range a.Data {
		id[dp.TemplateFieldKey] = dp.Id
	}
	var fr models.FetchRequest
	o.Do("POST", "/api/1.0/acts/"+a.Uuid.String()+"/fetch-requests", o.member.token,
		map[string]any{"data_point_ids": []int64{id["revenue"], id["rating"], id["employees"]}}).Status(t, http.StatusCreated).Decode(t, &fr)
	base := "/api/1.0/acts/" + a.Uuid.String() + "/data"
	o.Do("PUT", fmt.Sprintf("%s/%d", base, id["revenue"]), o.member.token, map[string]any{"fetch_request_id": fr.Id, "value": "1000.00"}).Status(t, http.StatusOK)
	o.Do("PUT", fmt.Sprintf("%s/%d", base, id["rating"]), o.member.token, map[string]any{"fetch_request_id": fr.Id, "error": "no rating agency answer"}).Status(t, http.StatusOK)
	return a
}

// TestActPagesRoles: every role reads an act's fetch requests (as GET
// /fetch-requests/{id}); another tenant's act is 404.
func TestActPagesRoles(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme, other := newOrg(t, env, "acme"), newOrg(t, env, "other")
			a := fetchedAct(t, env, acme)
			path := "/console/acts/" + a.Uuid.String()
			viewer := acme.client(t)
			viewer.login(acme.viewer)
			r := viewer.do("GET", path, nil)
			if r.code != 200 || !strings.Contains(r.body, "no rating agency answer") || !strings.Contains(r.body, "Review &lt;2026&gt;") {
				t.Fatalf("viewer: %d", r.code)
			}
			// Words for the codes, and people and apps by name.
			for _, w := range []string{"<td>Act created</td>", "<td>Fetch requested</td>", "<td>Value accepted</td>", "<td>Fetch failed</td>",
				"<td>External data</td>", "<td>Entered by hand</td>", "<td>Test member (member@acme.example.com)</td>",
				"<td>The app &#34;Ledger sync&#34; for Test member (member@acme.example.com)</td>"} {
				if !strings.Contains(r.body, w) {
					t.Errorf("act page lacks %s", w)
				}
			}
			for _, code := range []string{"value_accepted", "external_data", "test-app", ">user<", ">app<"} {
				if strings.Contains(r.body, code) {
					t.Errorf("act page shows the code %s", code)
				}
			}
			for _, state := range []string{">accepted<", ">failed<", ">awaiting<"} {
				if !strings.Contains(r.body, state) {
					t.Errorf("page lacks the state %s", state)
				}
			}
			if r := viewer.do("GET", "/console/acts?uuid="+a.Uuid.String(), nil); r.code != http.StatusSeeOther || r.location != path {
				t.Fatalf("lookup: %d %q", r.code, r.location)
			}
			if r := viewer.do("GET", "/console/acts?uuid=nope", nil); r.code != http.StatusBadRequest {
				t.Fatalf("bad lookup: %d", r.code)
			}
			stranger := other.client(t)
			stranger.login(other.admin)
			if r := stranger.do("GET", path, nil); r.code != http.StatusNotFound {
				t.Fatalf("another tenant's act: %d", r.code)
			}
		})
	}
}
