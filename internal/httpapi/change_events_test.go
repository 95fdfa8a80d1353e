package httpapi_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// The change events, end to end on both dialects: a subscriber of each
// kind receives exactly one signed delivery per change, valid against the
// kind's callback schema (the receiver checks), and GET /events/{id}
// returns the same id and body. A refused change (deleting a client with
// acts) sends nothing.
func TestChangeEventsDelivered(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			d := testdb.Open(t, dialect)
			rcv := newE2EReceiver(t)
			env := deliveringEnv(t, d, rcv)

			f := newActFixture(t, env, "acme")
			tok := f.Token(f.member, auth.ScopeActsRead, auth.ScopeActsWrite, auth.ScopeWebhooksRead, auth.ScopeWebhooksWrite,
				auth.ScopeClientsRead, auth.ScopeClientsWrite, auth.ScopeEventsRead)
			kinds := []string{outbox.ClientCreated, outbox.ClientUpdated, outbox.ClientDeleted, outbox.ActUpdated,
				outbox.ActFinalized, outbox.ActDeleted, outbox.ActDataUpdated, outbox.FetchRequestCompleted, outbox.ActFetchData}
			for _, k := range kinds {
				var wh models.WebhookWithSecret
				f.Do("POST", "/api/1.0/webhooks", tok, map[string]any{"event": k, "target": rcv.URL + "/events/" + k}).Status(t, 201).Decode(t, &wh)
				rcv.mu.Lock()
				rcv.secrets["/events/"+k] = wh.Secret
				rcv.mu.Unlock()
			}
			got := map[string][]receivedEvent{}
			expect := func(kind string) receivedEvent {
				t.Helper()
				for len(got[kind]) == 0 {
					ev := rcv.next(t)
					got[ev.Event] = append(got[ev.Event], ev)
				}
				ev := got[kind][0]
				got[kind] = got[kind][1:]
				return ev
			}
			var data struct {
				Client       models.Client       `json:"client"`
				ActUUID      string              `json:"act_uuid"`
				Act          models.Act          `json:"act"`
				Data         []models.DataPoint  `json:"data"`
				RequestID    *string             `json:"fetch_request_id"`
				FetchRequest models.FetchRequest `json:"fetch_request"`
			}
			body := func(ev receivedEvent) {
				t.Helper()
				var env struct {
					Data json.RawMessage `json:"data"`
				}
				if err := json.Unmarshal(ev.Body, &env); err != nil {
					t.Fatal(err)
				}
				data = struct {
					Client       models.Client       `json:"client"`
					ActUUID      string              `json:"act_uuid"`
					Act          models.Act          `json:"act"`
					Data         []models.DataPoint  `json:"data"`
					RequestID    *string             `json:"fetch_request_id"`
					FetchRequest models.FetchRequest `json:"fetch_request"`
				}{}
				if err := json.Unmarshal(env.Data, &data); err != nil {
					t.Fatal(err)
				}
				// The events API returns the delivered envelope, same id and body.
				var one, delivered map[string]any
				f.Do("GET", "/api/1.0/events/"+ev.ID, tok, nil).Status(t, http.StatusOK).Decode(t, &one)
				_ = json.Unmarshal(ev.Body, &delivered)
				if !reflect.DeepEqual(one, delivered) {
					t.Fatalf("GET /events/%s = %v, delivered %v", ev.ID, one, delivered)
				}
			}

			// Clients.
			var c models.Client
			f.Do("POST", "/api/1.0/clients", tok, map[string]any{"company_name": "Nordic Timber AS", "org_number": "923456781", "country": "NO", "credit_limit": 1000}).
				Status(t, 201).Decode(t, &c)
			body(expect(outbox.ClientCreated))
			if data.Client.Id != c.Id {
				t.Fatalf("client.created about %+v", data.Client)
			}
			f.Do("PATCH", "/api/1.0/clients/"+strconv.FormatInt(c.Id, 10), tok, map[string]any{"company_name": "Nordic Timber ASA"}).Status(t, 200)
			body(expect(outbox.ClientUpdated))
			if data.Client.CompanyName != "Nordic Timber ASA" {
				t.Fatalf("client.updated %+v", data.Client)
			}

			// Acts.
			a := f.createAct(t, "Q3 review")
			f.Do("DELETE", "/api/1.0/clients/"+strconv.FormatInt(f.client.ID, 10), tok, nil).Status(t, http.StatusBadRequest)
			f.Do("PATCH", "/api/1.0/acts/"+a.Uuid.String(), f.tok, map[string]any{"title": "Q3 review, final"}).Status(t, 200)
			body(expect(outbox.ActUpdated))
			if data.Act.Uuid != a.Uuid || data.Act.Title != "Q3 review, final" {
				t.Fatalf("act.updated %+v", data.Act)
			}
			s := &scn{f: f, a: a}
			s.edit(t, "note", "looked at it")
			body(expect(outbox.ActDataUpdated))
			if data.ActUUID != a.Uuid.String() || data.RequestID != nil || len(data.Data) != 1 || data.Data[0].Id != s.id(t, "note") || *data.Data[0].Value != "looked at it" {
				t.Fatalf("act.data_updated (edit) %+v", data)
			}
			s.fr = f.requestFetch(t, a, "rating", "company")
			expect(outbox.ActFetchData)
			s.correlated(t, "bulk", item{field: "rating", value: val("B")}).Status(t, 200)
			body(expect(outbox.ActDataUpdated))
			if data.RequestID == nil || *data.RequestID != s.fr.Id.String() || len(data.Data) != 1 || data.Data[0].Id != s.id(t, "rating") {
				t.Fatalf("act.data_updated (result) %+v", data)
			}
			body(expect(outbox.FetchRequestCompleted))
			if fr := data.FetchRequest; fr.Id != s.fr.Id || fr.Status != models.FetchRequestCompleted || len(fr.Fields) != 2 ||
				fr.Fields[0].State != models.FetchStateAccepted || fr.Fields[1].State != models.FetchStateAccepted {
				t.Fatalf("fetch_request.completed %+v", data.FetchRequest)
			}
			f.Do("POST", "/api/1.0/acts/"+a.Uuid.String()+"/finalize", f.tok, nil).Status(t, 200)
			body(expect(outbox.ActFinalized))
			if data.Act.Status != models.ActStatusFinal {
				t.Fatalf("act.finalized %+v", data.Act)
			}
			b := f.createAct(t, "Scratch")
			f.Do("DELETE", "/api/1.0/acts/"+b.Uuid.String(), f.tok, nil).Status(t, 204)
			body(expect(outbox.ActDeleted))
			if data.ActUUID != b.Uuid.String() {
				t.Fatalf("act.deleted %+v", data)
			}
			f.Do("DELETE", "/api/1.0/clients/"+strconv.FormatInt(c.Id, 10), tok, nil).Status(t, 204)
			body(expect(outbox.ClientDeleted))
			if data.Client.Id != c.Id {
				t.Fatalf("client.deleted %+v", data.Client)
			}

			// Exactly one event of each, nothing more delivered.
			want := map[string]int64{outbox.ClientCreated: 1, outbox.ClientUpdated: 1, outbox.ClientDeleted: 1, outbox.ActUpdated: 1,
				outbox.ActFinalized: 1, outbox.ActDeleted: 1, outbox.ActDataUpdated: 2, outbox.FetchRequestCompleted: 1}
			for k, n := range want {
				if got := countRows(t, env, "events", "kind = ?", k); got != n {
					t.Errorf("%d %s events, want %d", got, k, n)
				}
			}
			for k, evs := range got {
				if len(evs) != 0 {
					t.Errorf("extra %s deliveries: %d", k, len(evs))
				}
			}
			select {
			case ev := <-rcv.events:
				t.Fatalf("unexpected extra delivery %s", ev.Body)
			case <-time.After(200 * time.Millisecond):
			}
		})
	}
}
