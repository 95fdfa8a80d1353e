package console_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/testdb"
)

// TestSecretOverlapShownAndEnded: after a rotation with an overlap, GET
// /webhooks/{id} returns the previous secret's end and the webhook page
// shows it with "End the overlap now"; ending it stops the previous
// secret (the API says null, the page no longer offers it), once, in the
// audit log; a viewer is not offered the action and is refused it.
func TestSecretOverlapShownAndEnded(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme := newOrg(t, env, "acme")
			wh := acme.webhook(t, acme.admin, "https://127.0.0.1:9/hook")
			api := fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id)
			var got models.Webhook
			got = models.Webhook{}
			acme.Do("GET", api, acme.admin.token, nil).Status(t, http.StatusOK).Decode(t, &got)
			if got.PreviousSecretExpiresAt != nil {
				t.Fatalf("a new registration has an overlap until %v", got.PreviousSecretExpiresAt)
			}
			var rot models.WebhookWithSecret
			acme.Do("POST", api+"/rotate-secret", acme.admin.token, map[string]any{"previous_secret_expires_in": 604800}).Status(t, http.StatusOK).Decode(t, &rot)
			acme.Do("GET", api, acme.admin.token, nil).Status(t, http.StatusOK).Decode(t, &got)
			if got.PreviousSecretExpiresAt == nil || rot.PreviousSecretExpiresAt == nil || !got.PreviousSecretExpiresAt.Equal(*rot.PreviousSecretExpiresAt) ||
				got.PreviousSecretExpiresAt.Before(time.Now().Add(6*24*time.Hour)) {
				t.Fatalf("GET during the overlap: %v (rotation said %v)", got.PreviousSecretExpiresAt, rot.PreviousSecretExpiresAt)
			}
			path := fmt.Sprintf("/console/webhooks/%d", wh.Id)
			viewer := acme.client(t)
			viewer.login(acme.viewer)
			vp := viewer.do("GET", path, nil)
			if !strings.Contains(vp.body, `id="overlap"`) || strings.Contains(vp.body, `id="end-overlap"`) {
				t.Fatal("the viewer's page: the overlap should show, without the action")
			}
			if r := viewer.post(path, path+"/end-overlap"); r.code != http.StatusForbidden {
				t.Fatalf("viewer ends the overlap: %d", r.code)
			}
			admin := acme.client(t)
			admin.login(acme.admin)
			page := admin.do("GET", path, nil)
			until := got.PreviousSecretExpiresAt.UTC().Format("2006-01-02 15:04:05 UTC")
			if !strings.Contains(page.body, "signs beside the current one until "+until) || !strings.Contains(page.body, `id="end-overlap"`) {
				t.Fatalf("the page does not show the overlap until %s", until)
			}
			if r := admin.post(path, path+"/end-overlap"); r.code != http.StatusSeeOther || r.location != path {
				t.Fatalf("end the overlap: %d %s", r.code, r.location)
			}
			got = models.Webhook{}
			acme.Do("GET", api, acme.admin.token, nil).Status(t, http.StatusOK).Decode(t, &got)
			if got.PreviousSecretExpiresAt != nil {
				t.Fatalf("after ending it, GET says %v", got.PreviousSecretExpiresAt)
			}
			if page = admin.do("GET", path, nil); strings.Contains(page.body, `id="overlap"`) || !strings.Contains(page.body, "The previous signing secret no longer signs") {
				t.Fatal("the page after ending the overlap")
			}
			if r := admin.post(path, path+"/end-overlap"); r.code != http.StatusSeeOther { // nothing to end: nothing recorded
				t.Fatalf("again: %d", r.code)
			}
			var n int64
			env.DB.Table("audit_log").Where("action = ? AND target_id = ?", audit.WebhookSecretOverlapEnded, fmt.Sprint(wh.Id)).Count(&n)
			if n != 1 {
				t.Errorf("%d %s records, want 1", n, audit.WebhookSecretOverlapEnded)
			}
		})
	}
}
