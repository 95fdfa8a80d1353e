package console_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// TestWebhookCreateAndEdit: the create form lists the event kinds with
// their catalog descriptions; a refused field is named beside it in one
// sentence and what was typed stays; a member's webhook is theirs (another
// member's list does not show it; the admin's does); the secret is shown
// once; the target changes with the same refusals; a viewer may do
// neither.
func TestWebhookCreateAndEdit(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme := newOrg(t, env, "acme")

			viewer := acme.client(t)
			viewer.login(acme.viewer)
			if r := viewer.do("GET", "/console/webhooks/new", nil); r.code != http.StatusForbidden {
				t.Fatalf("viewer form: %d", r.code)
			}
			if r := viewer.do("GET", "/console/webhooks", nil); strings.Contains(r.body, `id="new-webhook"`) {
				t.Fatal("the viewer is offered a new webhook")
			}

			member := acme.client(t)
			member.login(acme.member)
			form := member.do("GET", "/console/webhooks/new", nil)
			if form.code != http.StatusOK || !strings.Contains(form.body, "Sent when an act is created (not when one is duplicated).") {
				t.Fatalf("form: %d, no event description", form.code)
			}
			tok := csrf(t, form.body)
			r := member.do("POST", "/console/webhooks", url.Values{"csrf_token": {tok}, "event": {outbox.ActCreated}, "target": {"ftp://nowhere"}})
			body := html.UnescapeString(r.body)
			if r.code != http.StatusBadRequest || !regexp.MustCompile(`<p class="field-error" id="target-error">[A-Z][^<]+\.</p>`).MatchString(body) ||
				!strings.Contains(body, `value="ftp://nowhere"`) || !strings.Contains(body, `id="event-act.created" checked`) {
				t.Fatalf("refused: %d %s", r.code, body)
			}
			if strings.Contains(body, "target: ") {
				t.Error("the field's message runs into the banner")
			}
			r = member.do("POST", "/console/webhooks", url.Values{"csrf_token": {tok}, "event": {outbox.ActCreated}, "target": {"https://127.0.0.1:9/mine"}})
			if r.code != http.StatusSeeOther || !strings.HasPrefix(r.location, "/console/webhooks/") {
				t.Fatalf("create: %d %q", r.code, r.location)
			}
			page := member.do("GET", r.location, nil)
			if !strings.Contains(page.body, `id="secret"`) || !strings.Contains(page.body, "was created") {
				t.Fatal("no secret shown after creation")
			}
			if again := member.do("GET", r.location, nil); strings.Contains(again.body, `id="secret"`) {
				t.Fatal("the secret is shown twice")
			}
			var id int64
			fmt.Sscanf(r.location, "/console/webhooks/%d", &id)
			var got models.Webhook
			acme.Do("GET", fmt.Sprintf("/api/1.0/webhooks/%d", id), acme.member.token, nil).Status(t, http.StatusOK).Decode(t, &got)
			if got.Event != outbox.ActCreated || got.Target != "https://127.0.0.1:9/mine" {
				t.Fatalf("API: %+v", got)
			}

			// Another member does not see it; the admin does.
			other := acme.User("member")
			acme.Do("GET", fmt.Sprintf("/api/1.0/webhooks/%d", id), acme.Token(other, "webhooks:read"), nil).Status(t, http.StatusNotFound)
			admin := acme.client(t)
			admin.login(acme.admin)
			if r := admin.do("GET", "/console/webhooks", nil); !strings.Contains(r.body, "https://127.0.0.1:9/mine") {
				t.Fatal("the admin does not see the member's webhook")
			}

			// The target changes, with the same refusals beside the field.
			path := fmt.Sprintf("/console/webhooks/%d", id)
			tok = csrf(t, member.do("GET", path, nil).body)
			r = member.do("POST", path+"/target", url.Values{"csrf_token": {tok}, "target": {"not a url"}})
			if r.code != http.StatusBadRequest || !strings.Contains(r.body, `id="target-error"`) || !strings.Contains(html.UnescapeString(r.body), `value="not a url"`) {
				t.Fatalf("refused target: %d", r.code)
			}
			r = member.do("POST", path+"/target", url.Values{"csrf_token": {tok}, "target": {"https://127.0.0.1:9/moved"}})
			if r.code != http.StatusSeeOther || r.location != path {
				t.Fatalf("change target: %d", r.code)
			}
			acme.Do("GET", fmt.Sprintf("/api/1.0/webhooks/%d", id), acme.member.token, nil).Status(t, http.StatusOK).Decode(t, &got)
			if got.Target != "https://127.0.0.1:9/moved" {
				t.Fatalf("target after the change: %s", got.Target)
			}
			if r := viewer.post(path, path+"/target"); r.code != http.StatusForbidden {
				t.Fatalf("viewer change: %d", r.code)
			}
		})
	}
}

// TestWebhookEditEvent: the registration's edit form offers the catalog's
// event types with their descriptions, the current one chosen; the event
// changes with the target, a refused one is named beside its field and
// changes nothing, and the change is confirmed on the page it returns to.
func TestWebhookEditEvent(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme := newOrg(t, env, "acme")
			member := acme.client(t)
			member.login(acme.member)
			tok := csrf(t, member.do("GET", "/console/webhooks/new", nil).body)
			r := member.do("POST", "/console/webhooks", url.Values{"csrf_token": {tok}, "event": {outbox.ActCreated}, "target": {"https://127.0.0.1:9/mine"}})
			if r.code != http.StatusSeeOther {
				t.Fatalf("create: %d", r.code)
			}
			path := r.location
			var id int64
			fmt.Sscanf(path, "/console/webhooks/%d", &id)
			api := fmt.Sprintf("/api/1.0/webhooks/%d", id)

			page := html.UnescapeString(member.do("GET", path, nil).body)
			form := page[strings.Index(page, `id="change-target"`):]
			form = form[:strings.Index(form, "</form>")]
			if !strings.Contains(form, `id="edit-event-act.created" checked`) || strings.Count(form, " checked") != 1 ||
				!strings.Contains(form, `id="edit-event-client.updated"`) || !strings.Contains(form, "Sent when an act is created (not when one is duplicated).") {
				t.Fatalf("edit form without the event choice: %s", form)
			}
			if strings.Contains(page, "create another webhook") {
				t.Error("the page still says the event cannot change")
			}

			tok = csrf(t, page)
			r = member.do("POST", path+"/target", url.Values{"csrf_token": {tok}, "event": {"act.exploded"}, "target": {"https://127.0.0.1:9/moved"}})
			body := html.UnescapeString(r.body)
			if r.code != http.StatusBadRequest || !regexp.MustCompile(`<p class="field-error" id="edit-event-error">[A-Z][^<]+\.</p>`).MatchString(body) ||
				!strings.Contains(body, `value="https://127.0.0.1:9/moved"`) {
				t.Fatalf("refused event: %d %s", r.code, body)
			}
			var got models.Webhook
			acme.Do("GET", api, acme.member.token, nil).Status(t, http.StatusOK).Decode(t, &got)
			if got.Event != outbox.ActCreated || got.Target != "https://127.0.0.1:9/mine" {
				t.Fatalf("after the refusal: %+v", got)
			}

			r = member.do("POST", path+"/target", url.Values{"csrf_token": {tok}, "event": {outbox.ClientUpdated}, "target": {"https://127.0.0.1:9/mine"}})
			if r.code != http.StatusSeeOther || r.location != path {
				t.Fatalf("change event: %d %q", r.code, r.location)
			}
			after := html.UnescapeString(member.do("GET", path, nil).body)
			if !strings.Contains(after, fmt.Sprintf("Webhook %d now receives client.updated events", id)) || !strings.Contains(after, `id="edit-event-client.updated" checked`) {
				t.Fatalf("no confirmation of the change, or the form shows the old event")
			}
			acme.Do("GET", api, acme.member.token, nil).Status(t, http.StatusOK).Decode(t, &got)
			if got.Event != outbox.ClientUpdated || got.Target != "https://127.0.0.1:9/mine" {
				t.Fatalf("after the change: %+v", got)
			}
		})
	}
}
