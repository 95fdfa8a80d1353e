package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/keyring"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/delivery"
)

// TestHealthAfter410: an endpoint answering 410 Gone is disabled by the
// delivery worker, and its health records the failed attempt: the API,
// the facts card and the Health section all say failing or disabled,
// because of the 410 (none says healthy, none names an older failure).
func TestHealthAfter410(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme := newOrg(t, env, "acme")
			gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGone) }))
			defer gone.Close()
			wh := acme.webhook(t, acme.admin, gone.URL+"/hook")
			path := fmt.Sprintf("/console/webhooks/%d", wh.Id)
			admin := acme.client(t)
			admin.login(acme.admin)
			if r := admin.post(path, path+"/test"); r.code != http.StatusSeeOther {
				t.Fatalf("test: %d", r.code)
			}
			box, err := sealing.New(keyring.MustNew(env.Config.Secret))
			if err != nil {
				t.Fatal(err)
			}
			w, err := delivery.NewWorker(env.DB, box, env.Config, testdb.Logger())
			if err != nil {
				t.Fatal(err)
			}
			if n, err := w.RunOnce(context.Background()); err != nil || n != 1 {
				t.Fatalf("RunOnce = %d, %v", n, err)
			}

			var got models.Webhook
			acme.Do("GET", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id), acme.admin.token, nil).Status(t, http.StatusOK).Decode(t, &got)
			h := got.Health
			if got.Active || got.DisabledReason == nil || !strings.Contains(*got.DisabledReason, "410") ||
				h.State != models.WebhookHealthFailing || h.ConsecutiveFailures != 1 || h.LastFailureReason == nil ||
				!strings.Contains(*h.LastFailureReason, "410") || h.LastFailureAt == nil || h.FailingSince == nil {
				t.Fatalf("API after a 410: active %v, disabled_reason %v, health %+v", got.Active, got.DisabledReason, h)
			}
			page := admin.do("GET", path, nil)
			card := section(t, page.body, `id="registration"`, `</dl>`)
			if !strings.Contains(card, `<span class="badge wait">failing</span>`) || !strings.Contains(card, "last failure: target answered 410") ||
				strings.Contains(card, "healthy") {
				t.Errorf("the facts card after a 410: %s", card)
			}
			health := section(t, page.body, `id="breaker"`, `</dl>`)
			if !strings.Contains(health, `<span class="badge off">disabled</span>`) || !strings.Contains(health, "410") {
				t.Errorf("the Health section after a 410: %s", health)
			}
		})
	}
}

// section is body from the first from to the next to after it.
func section(t *testing.T, body, from, to string) string {
	t.Helper()
	i := strings.Index(body, from)
	if i < 0 {
		t.Fatalf("no %s on the page", from)
	}
	j := strings.Index(body[i:], to)
	if j < 0 {
		t.Fatalf("no %s after %s", to, from)
	}
	return body[i : i+j]
}
