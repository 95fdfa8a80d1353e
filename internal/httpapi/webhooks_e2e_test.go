package httpapi_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/fieldtype"
	"github.com/finsvc/finsvc/internal/integration"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/delivery"
	"github.com/finsvc/finsvc/internal/webhooks/httpclient"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/pkg/webhooks/sign"
)

// receivedEvent is one verified delivery at the e2e receiver.
type receivedEvent struct {
	ID    string `json:"id"`
	Event string `json:"event"`
	Data  struct {
		Act struct {
			UUID string `json:"uuid"`
		} `json:"act"`
		SourceActUUID string `json:"source_act_uuid"`
	} `json:"data"`
	Body []byte `json:"-"` // the delivery body as received
}

// e2eReceiver is the integrator's side, over TLS: /fetch runs the reference
// integration; /events records act.created and act.duplicated after
// verifying their signature.
type e2eReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	secrets map[string]string // path → secret
	fetch   http.Handler
	events  chan receivedEvent
	bad     chan string
	fetched chan struct{} // one per request served on /fetch
}

func newE2EReceiver(t *testing.T) *e2eReceiver {
	r := &e2eReceiver{secrets: map[string]string{}, events: make(chan receivedEvent, 16), bad: make(chan string, 16), fetched: make(chan struct{}, 16)}
	r.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		fetch, secret := r.fetch, r.secrets[req.URL.Path]
		r.mu.Unlock()
		body, _ := io.ReadAll(req.Body)
		// Every delivery must match its callback schema in the document,
		// like every response the tests see.
		if err := apitest.ValidateEvent(body); err != nil {
			r.bad <- req.URL.Path + ": " + err.Error()
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if req.URL.Path == "/fetch" {
			req.Body = io.NopCloser(bytes.NewReader(body))
			fetch.ServeHTTP(w, req)
			r.fetched <- struct{}{}
			return
		}
		if err := sign.Verify(secret, req.Header.Get(sign.HeaderSignature), body, time.Now()); err != nil {
			r.bad <- req.URL.Path + ": " + err.Error()
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var ev receivedEvent
		json.Unmarshal(body, &ev)
		ev.Body = body
		r.events <- ev
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *e2eReceiver) next(t *testing.T) receivedEvent {
	t.Helper()
	select {
	case ev := <-r.events:
		return ev
	case msg := <-r.bad:
		t.Fatalf("receiver rejected a delivery: %s", msg)
	case <-time.After(20 * time.Second):
		t.Fatal("no delivery arrived")
	}
	return receivedEvent{}
}

// The whole loop: a member registers webhooks, creates and duplicates an
// act and asks for a refresh; the service delivers the events over TLS; the
// reference integration answers act.fetch_data with one bulk write; the act
// ends with the values and history entries.
// deliveringEnv is the whole service on d with its delivery worker
// started: loopback targets allowed (rcv listens there), rcv's certificate
// trusted, no rate limit, and opts for the worker.
func deliveringEnv(t *testing.T, d *db.DB, rcv *e2eReceiver, opts ...delivery.Option) *apitest.Env {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(rcv.Certificate())
	opts = append([]delivery.Option{delivery.WithClientOptions(httpclient.Options{RootCAs: pool})}, opts...)
	env := apitest.New(t, apitest.WithDB(d),
		apitest.WithConfig(func(c *config.Config) { c.Secret = testSecret; c.WebhookAllowPrivate = true; c.RateLimitRPS = 0 }),
		apitest.WithApp(app.WithDeliveryOptions(opts...)))
	if err := env.App.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.App.Stop)
	return env
}

func TestWebhooksEndToEndOverTLS(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			d := testdb.Open(t, dialect)
			rcv := newE2EReceiver(t)
			env := deliveringEnv(t, d, rcv, delivery.WithPollInterval(time.Hour)) // wake-ups only: proves they work

			f := newActFixture(t, env, "acme")
			tok := f.Token(f.member, auth.ScopeActsRead, auth.ScopeActsWrite, auth.ScopeWebhooksRead, auth.ScopeWebhooksWrite)
			register := func(event, path string) models.WebhookWithSecret {
				var wh models.WebhookWithSecret
				f.Do("POST", "/api/1.0/webhooks", tok, map[string]any{"event": event, "target": rcv.URL + path}).Status(t, 201).Decode(t, &wh)
				rcv.mu.Lock()
				rcv.secrets[path] = wh.Secret
				rcv.mu.Unlock()
				return wh
			}
			register(outbox.ActCreated, "/events/created")
			register(outbox.ActDuplicated, "/events/duplicated")
			fetchHook := register(outbox.ActFetchData, "/fetch")

			// The integration holds an access token of its own (an app
			// acting for the member) and the act.fetch_data secret.
			done := make(chan error, 4)
			integ, err := integration.New(integration.Config{
				Secrets: []string{fetchHook.Secret}, BaseURL: env.Server.URL, Host: f.Host,
				Token: f.Token(f.member, auth.ScopeActsRead, auth.ScopeActsWrite),
				OnDone: func(_ string, status int, err error) {
					if err == nil && status != http.StatusOK {
						err = &statusError{status}
					}
					done <- err
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer integ.Close(context.Background())
			rcv.mu.Lock()
			rcv.fetch = integ
			rcv.mu.Unlock()

			// act.created, with the new act.
			a := f.createAct(t, "Q3 review")
			ev := rcv.next(t)
			if ev.Event != outbox.ActCreated || ev.Data.Act.UUID != a.Uuid.String() {
				t.Fatalf("first event %+v, want act.created for %s", ev, a.Uuid)
			}
			// act.duplicated, and no act.created, for a duplicate.
			var dup models.Act
			f.Do("POST", "/api/1.0/acts/"+a.Uuid.String()+"/duplicate", f.tok, nil).Status(t, 201).Decode(t, &dup)
			ev = rcv.next(t)
			if ev.Event != outbox.ActDuplicated || ev.Data.Act.UUID != dup.Uuid.String() || ev.Data.SourceActUUID != a.Uuid.String() {
				t.Fatalf("event %+v, want act.duplicated of %s into %s", ev, a.Uuid, dup.Uuid)
			}

			// The user asks for a refresh of external and built-in fields.
			external := []string{"revenue", "rating", "employees", "owners"}
			fr := f.requestFetch(t, a, append(append([]string{}, external...), "company")...)
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("integration: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the integration never wrote back")
			}

			got := f.getAct(t, a)
			byDP := map[int64]string{}
			for _, key := range external {
				dp := dpByKey(t, got, key)
				if dp.Value == nil || dp.SourceValue == nil || *dp.SourceValue != *dp.Value || dp.Revision != 1 {
					t.Fatalf("%s after the loop: %+v", key, dp)
				}
				if dp.Fetch == nil || dp.Fetch.State != models.FetchStateAccepted || dp.Fetch.FetchRequestId != fr.Id {
					t.Fatalf("%s fetch: %+v", key, dp.Fetch)
				}
				if _, err := fieldtype.Normalize(fieldtype.Type(dp.Type), fieldOptions(t, dp.Options), *dp.Value); err != nil {
					t.Fatalf("%s value %q: %v", key, *dp.Value, err)
				}
				byDP[dp.Id] = *dp.Value
			}
			var fr2 models.FetchRequest
			f.Do("GET", "/api/1.0/acts/"+a.Uuid.String()+"/fetch-requests/"+fr.Id.String(), f.tok, nil).Status(t, 200).Decode(t, &fr2)
			if fr2.Status != models.FetchRequestCompleted {
				t.Fatalf("fetch request %s", fr2.Status)
			}
			var hist models.HistoryList
			f.Do("GET", "/api/1.0/acts/"+a.Uuid.String()+"/history?limit=100", f.tok, nil).Status(t, 200).Decode(t, &hist)
			accepted := 0
			for _, h := range hist.Data {
				if h.Kind != models.HistoryValueAccepted || h.FetchRequestId == nil || *h.FetchRequestId != fr.Id || h.DataPointId == nil {
					continue
				}
				want, external := byDP[*h.DataPointId]
				if !external {
					continue // the built-in company field, filled by the service
				}
				if h.NewValue == nil || *h.NewValue != want || h.Actor.Type != models.ActorApp {
					t.Fatalf("history entry %+v", h)
				}
				accepted++
			}
			if accepted != len(external) {
				t.Fatalf("%d value_accepted history entries, want %d", accepted, len(external))
			}

			// The delivery log shows the act.fetch_data delivery. The write-back
			// can finish before the worker records the 202 it got, so wait for
			// the record (as for the redelivery below).
			var log models.DeliveryList
			for i := 0; ; i++ {
				f.Do("GET", "/api/1.0/webhooks/"+itoa(fetchHook.Id)+"/deliveries", tok, nil).Status(t, 200).Decode(t, &log)
				if len(log.Data) != 1 || log.Data[0].Status != models.DeliveryDelivering || i == 200 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if len(log.Data) != 1 || log.Data[0].Status != models.DeliverySucceeded || log.Data[0].LastStatusCode == nil || *log.Data[0].LastStatusCode != 202 {
				t.Fatalf("delivery log %+v", log.Data)
			}
			// Exactly one act.created (the duplicate had none) and one
			// act.duplicated were recorded and delivered.
			if n := countRows(t, env, "events", "kind = ?", outbox.ActCreated); n != 1 {
				t.Fatalf("%d act.created events", n)
			}
			if n := countRows(t, env, "delivery_log", "status <> 'succeeded'"); n != 0 {
				t.Fatalf("%d deliveries not succeeded", n)
			}
			select {
			case ev := <-rcv.events:
				t.Fatalf("unexpected extra delivery %+v", ev)
			default:
			}

			// Redelivery: the same event id, signed afresh, acknowledged by
			// the integration, which does not write twice.
			<-rcv.fetched
			var red models.Delivery
			f.Do("POST", "/api/1.0/webhooks/"+itoa(fetchHook.Id)+"/deliveries/"+log.Data[0].Id.String()+"/redeliver", tok, nil).Status(t, 202).Decode(t, &red)
			if red.EventId != log.Data[0].EventId || red.Status != models.DeliveryPending {
				t.Fatalf("redelivered %+v", red)
			}
			select {
			case <-rcv.fetched:
			case <-time.After(20 * time.Second):
				t.Fatal("the redelivery never arrived")
			}
			for i := 0; ; i++ { // the worker records the outcome after the response
				f.Do("GET", "/api/1.0/webhooks/"+itoa(fetchHook.Id)+"/deliveries", tok, nil).Status(t, 200).Decode(t, &log)
				if log.Data[0].Status == models.DeliverySucceeded {
					break
				}
				if i == 200 {
					t.Fatalf("redelivery not recorded: %+v", log.Data[0])
				}
				time.Sleep(10 * time.Millisecond)
			}
			if log.Data[0].Attempts != 1 || log.Data[0].EventId != red.EventId {
				t.Fatalf("after redelivery %+v", log.Data[0])
			}
			integ.Close(context.Background())
			if n := len(done); n != 0 {
				t.Fatalf("the duplicate started the work again (%d)", n)
			}
		})
	}
}

type statusError struct{ code int }

func (e *statusError) Error() string { return "write-back status " + itoa(int64(e.code)) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func fieldOptions(t *testing.T, o *models.FieldOptions) *fieldtype.Options {
	t.Helper()
	if o == nil {
		return nil
	}
	b, _ := json.Marshal(o)
	var out fieldtype.Options
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}
