package httpapi_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// POST /webhooks/{id}/test sends one signed webhook.test event, matching
// its callback schema, to that registration only, through the outbox and
// the delivery log; it follows the registration rules (viewers 403,
// another member's registration 404, inactive 400).
func TestWebhookTestEvent(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			d := testdb.Open(t, dialect)
			rcv := newE2EReceiver(t)
			env := deliveringEnv(t, d, rcv)

			f := newActFixture(t, env, "acme")
			tok := f.Token(f.member, auth.ScopeWebhooksRead, auth.ScopeWebhooksWrite, auth.ScopeActsRead)
			var wh models.WebhookWithSecret
			f.Do("POST", "/api/1.0/webhooks", tok, map[string]any{"event": outbox.ActFetchData, "target": rcv.URL + "/events/test"}).
				Status(t, http.StatusCreated).Decode(t, &wh)
			rcv.mu.Lock()
			rcv.secrets["/events/test"] = wh.Secret
			rcv.mu.Unlock()
			path := "/api/1.0/webhooks/" + strconv.FormatInt(wh.Id, 10)

			var dl models.Delivery
			f.Do("POST", path+"/test", tok, nil).Status(t, http.StatusAccepted).Decode(t, &dl)
			if dl.Event != models.DeliveryWebhookTest || dl.WebhookId != wh.Id {
				t.Fatalf("test delivery %+v", dl)
			}
			ev := rcv.next(t) // verified signature and callback schema
			if ev.Event != outbox.WebhookTest || ev.ID != dl.EventId.String() {
				t.Fatalf("received %+v; want webhook.test %s", ev, dl.EventId)
			}
			// GET /events/{id} returns the envelope as it was delivered.
			var delivered, got any
			if err := json.Unmarshal(ev.Body, &delivered); err != nil {
				t.Fatal(err)
			}
			f.Do("GET", "/api/1.0/events/"+ev.ID, f.Token(f.member, auth.ScopeEventsRead, auth.ScopeWebhooksRead), nil).Status(t, http.StatusOK).Decode(t, &got)
			if !reflect.DeepEqual(delivered, got) {
				t.Fatalf("GET /events/%s = %v; delivered %v", ev.ID, got, delivered)
			}
			// The delivery log shows it, delivered.
			deadline := time.Now().Add(10 * time.Second)
			for {
				var log struct {
					Data []models.Delivery `json:"data"`
				}
				f.Do("GET", path+"/deliveries", tok, nil).Status(t, http.StatusOK).Decode(t, &log)
				if len(log.Data) == 1 && log.Data[0].Id == dl.Id && log.Data[0].Status == models.DeliverySucceeded {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("delivery log %+v", log.Data)
				}
				time.Sleep(50 * time.Millisecond)
			}
			// Nothing else was sent: the test went to this registration only.
			select {
			case extra := <-rcv.events:
				t.Fatalf("an extra delivery %+v", extra)
			case <-time.After(200 * time.Millisecond):
			}

			f.Do("POST", path+"/test", f.Token(f.viewer, auth.ScopeWebhooksWrite), nil).Status(t, http.StatusForbidden)
			other := f.Token(f.User(auth.RoleMember), auth.ScopeWebhooksWrite)
			f.Do("POST", path+"/test", other, nil).Status(t, http.StatusNotFound)
			f.Do("POST", "/api/1.0/webhooks/999/test", tok, nil).Status(t, http.StatusNotFound)
			f.Do("PATCH", path, tok, map[string]any{"active": false}).Status(t, http.StatusOK)
			wantField(t, f.Do("POST", path+"/test", tok, nil), "active")
		})
	}
}

// GET /event-types lists every event with a self-contained schema of its
// delivery body, read from the spec's callbacks.
func TestEventTypes(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		tok := acme.Token(acme.User(auth.RoleViewer), auth.ScopeWebhooksRead)
		var out models.EventTypeList
		acme.Do("GET", "/api/1.0/event-types", tok, nil).Status(t, http.StatusOK).Decode(t, &out)
		var names []string
		for _, et := range out.Data {
			names = append(names, et.Name)
			if et.Subscribable != (et.Name != outbox.WebhookTest) || et.Description == "" {
				t.Errorf("%s: %+v", et.Name, et)
			}
			b, _ := json.Marshal(et.Schema)
			if strings.Contains(string(b), "$ref") || !strings.Contains(string(b), `"`+et.Name+`"`) {
				t.Errorf("%s: schema not self-contained or not naming the event: %s", et.Name, b)
			}
			props, _ := et.Schema["properties"].(map[string]any)
			if _, ok := props["data"].(map[string]any)["properties"]; !ok {
				t.Errorf("%s: data schema not resolved: %v", et.Name, props["data"])
			}
		}
		if strings.Join(names, ",") != "act.created,act.data_updated,act.deleted,act.duplicated,act.fetch_data,act.finalized,act.updated,"+
			"client.created,client.deleted,client.updated,fetch_request.completed,webhook.test" {
			t.Fatalf("event types %v", names)
		}
		acme.Do("GET", "/api/1.0/event-types", "", nil).Status(t, http.StatusUnauthorized)
	})
}
