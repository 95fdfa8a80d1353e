package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// TestWebhookFormsTakeSeveralTypes: the create and edit forms are
// checkboxes; several ticked types, or "all subscribable events", are what
// the registration takes (read back through the API), the edit form shows
// them ticked, and a form with nothing ticked is refused beside the field.
func TestWebhookFormsTakeSeveralTypes(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme := newOrg(t, env, "acme")
			admin := acme.client(t)
			admin.login(acme.admin)
			form := admin.do("GET", "/console/webhooks/new", nil)
			if !strings.Contains(form.body, `type="checkbox" name="event" value="act.created"`) || !strings.Contains(form.body, `id="event-all"`) {
				t.Fatalf("the create form has no checkboxes: %s", form.body)
			}
			tok := csrf(t, form.body)
			r := admin.do("POST", "/console/webhooks", url.Values{"csrf_token": {tok}, "event": {outbox.ActUpdated, outbox.ClientCreated}, "target": {"https://127.0.0.1:9/two"}, "description": {"Ledger <sync>"}})
			if r.code != http.StatusSeeOther {
				t.Fatalf("create: %d %s", r.code, r.body)
			}
			var id int64
			fmt.Sscanf(r.location, "/console/webhooks/%d", &id)
			path := fmt.Sprintf("/api/1.0/webhooks/%d", id)
			var got models.Webhook
			acme.Do("GET", path, acme.admin.token, nil).Status(t, http.StatusOK).Decode(t, &got)
			if !slices.Equal(got.EventTypes, []models.EventKind{outbox.ClientCreated, outbox.ActUpdated}) && !slices.Equal(got.EventTypes, []models.EventKind{outbox.ActUpdated, outbox.ClientCreated}) {
				t.Fatalf("API after the form: %+v", got)
			}
			page := admin.do("GET", r.location, nil)
			if got.Description != "Ledger <sync>" || !strings.Contains(page.body, `<dd id="description">Ledger &lt;sync&gt;</dd>`) ||
				!strings.Contains(page.body, `name="description" value="Ledger &lt;sync&gt;"`) {
				t.Fatalf("the description: API %q, page without it", got.Description)
			}
			if !strings.Contains(page.body, `id="edit-event-act.updated" checked`) || !strings.Contains(page.body, `id="edit-event-client.created" checked`) ||
				strings.Contains(page.body, `id="edit-event-act.created" checked`) {
				t.Fatal("the edit form does not show the two types ticked")
			}
			tok = csrf(t, page.body)
			r = admin.do("POST", r.location+"/target", url.Values{"csrf_token": {tok}, "events_shown": {"1"}, "all_events": {"true"}, "target": {"https://127.0.0.1:9/two"}})
			if r.code != http.StatusSeeOther {
				t.Fatalf("edit to all: %d %s", r.code, r.body)
			}
			acme.Do("GET", path, acme.admin.token, nil).Status(t, http.StatusOK).Decode(t, &got)
			if !got.AllEvents {
				t.Fatalf("API after all events: %+v", got)
			}
			if after := admin.do("GET", r.location, nil); !strings.Contains(after.body, `id="edit-event-all" checked`) || !strings.Contains(after.body, "receives all events") {
				t.Fatal("the page does not say all events")
			}
			r = admin.do("POST", fmt.Sprintf("/console/webhooks/%d/target", id), url.Values{"csrf_token": {tok}, "events_shown": {"1"}, "target": {"https://127.0.0.1:9/two"}})
			if r.code != http.StatusBadRequest || !strings.Contains(r.body, `id="edit-event-error"`) {
				t.Fatalf("nothing ticked: %d", r.code)
			}
			acme.Do("GET", path, acme.admin.token, nil).Status(t, http.StatusOK).Decode(t, &got)
			if !got.AllEvents {
				t.Fatalf("a refused edit changed the registration: %+v", got)
			}
		})
	}
}
