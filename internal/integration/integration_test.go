package integration_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/authspec"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/fieldtype"
	"github.com/finsvc/finsvc/internal/integration"
	"github.com/finsvc/finsvc/internal/keyring"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/delivery"
	"github.com/finsvc/finsvc/internal/webhooks/httpclient"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
	"github.com/finsvc/finsvc/pkg/webhooks/sign"
)

const globalSecret = "integration-test-global-secret-0123456789"

// fakeAPI stands in for finsvc's bulk PUT and records what it receives.
type fakeAPI struct {
	*httptest.Server
	mu     sync.Mutex
	puts   []put
	status int
}

type put struct {
	Path, Host, Auth string
	Body             struct {
		FetchRequestID string `json:"fetch_request_id"`
		Data           []struct {
			ID    *int64  `json:"id"`
			Value *string `json:"value"`
			Error *string `json:"error"`
		} `json:"data"`
	}
}

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{status: 200}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p put
		p.Path, p.Host, p.Auth = r.Method+" "+r.URL.Path, r.Host, r.Header.Get("Authorization")
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &p.Body)
		f.mu.Lock()
		f.puts = append(f.puts, p)
		status := f.status
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status == 200 {
			json.NewEncoder(w).Encode(map[string]any{"fetch_request_id": p.Body.FetchRequestID, "data": []any{}})
		} else {
			io.WriteString(w, `{"message":"boom","errors":{}}`)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) all() []put {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]put(nil), f.puts...)
}

type doneEvent struct {
	id     string
	status int
	err    error
}

func opts(v string) *fieldtype.Options {
	var o fieldtype.Options
	if err := json.Unmarshal([]byte(v), &o); err != nil {
		panic(err)
	}
	return &o
}

// fields is an act.fetch_data selection: three external fields of
// different types and one built-in field that must be skipped.
func fields() []map[string]any {
	return []map[string]any{
		{"id": 11, "template_field_id": 1, "template_field_key": "revenue", "template_field_name": "Revenue", "type": "number", "external_data_field": true, "source": "external_data", "options": map[string]any{"decimals": 2, "min": "0"}},
		{"id": 12, "template_field_id": 2, "template_field_key": "rating", "template_field_name": "Rating", "type": "select", "external_data_field": true, "source": "external_data", "options": map[string]any{"choices": []string{"A", "B", "C"}}},
		{"id": 13, "template_field_id": 3, "template_field_key": "owners", "template_field_name": "Owners", "type": "table", "external_data_field": true, "source": "external_data", "options": map[string]any{"columns": []map[string]any{{"key": "name", "name": "Name", "type": "text"}, {"key": "share", "name": "Share", "type": "percentage"}}}},
		{"id": 14, "template_field_id": 4, "template_field_key": "company", "template_field_name": "Company", "type": "text", "external_data_field": false, "source": "client.company_name", "options": nil},
	}
}

type loop struct {
	t        *testing.T
	db       *db.DB
	ctx      context.Context
	store    *registry.Store
	webhook  *registry.Webhook
	owner    *auth.Principal // the member that registered webhook
	secret   string
	worker   *delivery.Worker
	api      *fakeAPI
	done     chan doneEvent
	receiver *httptest.Server
}

func newLoop(t *testing.T, d *db.DB) *loop {
	l := &loop{t: t, db: d, api: newFakeAPI(t), done: make(chan doneEvent, 10)}
	ctx, tn := testdb.NewTenant(t, d, "acme")
	l.ctx = ctx
	uid, _ := db.NextID(d.DB, tn.ID, "users")
	if err := d.Table("users").Create(map[string]any{"tenant_id": tn.ID, "id": uid, "email": "m@acme", "name": "M", "role": "member", "password_hash": "!"}).Error; err != nil {
		t.Fatal(err)
	}
	box, _ := sealing.New(keyring.MustNew(globalSecret))
	l.store = registry.New(d, box, registry.Options{Policy: testPolicy(t), AllowPrivate: true})

	// The receiver is registered before its secret exists; it reads the
	// secret through this indirection once registration returns it.
	var rcv *integration.Receiver
	l.receiver = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rcv.ServeHTTP(w, r) }))
	t.Cleanup(l.receiver.Close)
	var err error
	l.owner = &auth.Principal{TenantID: tn.ID, UserID: uid, Role: "member", ClientID: "integration",
		Scopes: []string{auth.ScopeActsRead, auth.ScopeActsWrite, auth.ScopeWebhooksRead, auth.ScopeWebhooksWrite}}
	l.webhook, l.secret, err = l.store.Create(ctx, l.owner, outbox.ActFetchData, l.receiver.URL+"/hooks/finsvc")
	if err != nil {
		t.Fatal(err)
	}
	rcv, err = integration.New(integration.Config{
		Secrets: []string{l.secret}, BaseURL: l.api.URL, Host: "acme.finsvc.test", Token: "access-token-1",
		OnDone: func(id string, status int, err error) { l.done <- doneEvent{id, status, err} },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rcv.Close(context.Background()) })

	cfg := config.Default()
	cfg.Secret = globalSecret
	cfg.WebhookAllowPrivate = true // the receiver listens on loopback
	pool := x509.NewCertPool()
	pool.AddCert(l.receiver.Certificate())
	l.worker, err = delivery.NewWorker(d, box, cfg, testdb.Logger(), delivery.WithClientOptions(httpclient.Options{RootCAs: pool}))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (l *loop) emitFetch(expires time.Time) (eventID, requestID, actUUID string) {
	l.t.Helper()
	ev, req, act := uuid.New(), uuid.New(), uuid.New()
	err := l.db.Tx(l.ctx, func(tx *gorm.DB) error {
		_, err := (&outbox.Outbox{Policy: outbox.Policy{AllowHTTP: true}}).Emit(l.ctx, tx, outbox.Event{
			ID: ev, Kind: outbox.ActFetchData, ExpiresAt: &expires,
			Data: map[string]any{
				"request_id": req, "requested_at": time.Now().UTC(), "expires_at": expires.UTC(),
				"act":    map[string]any{"uuid": act, "client_id": 1, "template_id": 1, "title": "Q3 review"},
				"fields": fields(),
			},
		})
		return err
	})
	if err != nil {
		l.t.Fatal(err)
	}
	return ev.String(), req.String(), act.String()
}

func (l *loop) deliver(want int) {
	l.t.Helper()
	if n, err := l.worker.RunOnce(l.ctx); err != nil || n != want {
		l.t.Fatalf("RunOnce = %d, %v; want %d", n, err, want)
	}
}

func (l *loop) wait() doneEvent {
	l.t.Helper()
	select {
	case d := <-l.done:
		return d
	case <-time.After(20 * time.Second):
		l.t.Fatal("the integration never finished")
		return doneEvent{}
	}
}

func (l *loop) deliveryStatus(eventID string) (status string, code *int) {
	var row struct {
		Status string
		Code   *int `gorm:"column:last_status_code"`
	}
	l.db.Table("delivery_log").Select("status, last_status_code").Where("event_id = ?", eventID).Take(&row)
	return row.Status, row.Code
}

func TestReferenceIntegrationLoopOverTLS(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		l := newLoop(t, d)
		ev, req, act := l.emitFetch(time.Now().Add(30 * time.Minute))
		l.deliver(1)
		status, code := l.deliveryStatus(ev)
		if status != "succeeded" || code == nil || *code != 202 {
			t.Fatalf("delivery %s %v", status, code)
		}
		if got := l.wait(); got.id != ev || got.status != 200 || got.err != nil {
			t.Fatalf("done %+v", got)
		}
		puts := l.api.all()
		if len(puts) != 1 {
			t.Fatalf("%d PUTs, want one bulk call", len(puts))
		}
		p := puts[0]
		if p.Path != "PUT /api/1.0/acts/"+act+"/data" || p.Host != "acme.finsvc.test" || p.Auth != "Bearer access-token-1" || p.Body.FetchRequestID != req {
			t.Fatalf("PUT %+v", p)
		}
		byID := map[int64]string{}
		for _, it := range p.Body.Data {
			if it.ID == nil || it.Value == nil || it.Error != nil {
				t.Fatalf("item %+v", it)
			}
			byID[*it.ID] = *it.Value
		}
		if len(byID) != 3 || byID[14] != "" {
			t.Fatalf("items %v: want the three external fields only", byID)
		}
		// Every value is valid for its field.
		for _, f := range fields() {
			id := int64(f["id"].(int))
			if id == 14 {
				continue
			}
			raw, _ := json.Marshal(f["options"])
			if _, err := fieldtype.Normalize(fieldtype.Type(f["type"].(string)), opts(string(raw)), byID[id]); err != nil {
				t.Fatalf("field %d value %q: %v", id, byID[id], err)
			}
		}

		// A redelivery of the same event (same id) is acknowledged and
		// ignored: the work is done.
		if _, err := l.store.Redeliver(l.ctx, l.owner, l.webhook.ID, uuid.MustParse(deliveryID(t, d, ev))); err != nil {
			t.Fatal(err)
		}
		l.deliver(1)
		if s, _ := l.deliveryStatus(ev); s != "succeeded" {
			t.Fatal(s)
		}
		if n := len(l.api.all()); n != 1 {
			t.Fatalf("%d PUTs after a duplicate delivery", n)
		}
	})
}

func deliveryID(t *testing.T, d *db.DB, eventID string) string {
	var id string
	if err := d.Table("delivery_log").Where("event_id = ?", eventID).Pluck("id", &id).Error; err != nil || id == "" {
		t.Fatalf("delivery of %s: %v", eventID, err)
	}
	return id
}

func TestRedeliveryResumesFailedWriteBack(t *testing.T) {
	l := newLoop(t, testdb.SQLite(t))
	ev, _, _ := l.emitFetch(time.Now().Add(30 * time.Minute))
	l.api.mu.Lock()
	l.api.status = 503
	l.api.mu.Unlock()
	l.deliver(1)
	if got := l.wait(); got.status != 503 || got.err == nil {
		t.Fatalf("done %+v", got)
	}
	l.api.mu.Lock()
	l.api.status = 200
	l.api.mu.Unlock()
	l.store.Redeliver(l.ctx, l.owner, l.webhook.ID, uuid.MustParse(deliveryID(t, l.db, ev)))
	l.deliver(1)
	if got := l.wait(); got.status != 200 {
		t.Fatalf("done %+v", got)
	}
	if n := len(l.api.all()); n != 2 {
		t.Fatalf("%d PUTs", n)
	}
}

func TestReceiverRejectsBadSignaturesAndSkipsExpired(t *testing.T) {
	api := newFakeAPI(t)
	secret, _ := sign.NewSecret()
	other, _ := sign.NewSecret()
	done := make(chan doneEvent, 4)
	rcv, err := integration.New(integration.Config{Secrets: []string{secret}, BaseURL: api.URL, Token: "t",
		OnDone: func(id string, status int, err error) { done <- doneEvent{id, status, err} }})
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close(context.Background())
	body := func(expires time.Time) []byte {
		b, _ := json.Marshal(map[string]any{"id": uuid.NewString(), "event": "act.fetch_data", "occurred_at": time.Now(),
			"data": map[string]any{"request_id": uuid.NewString(), "requested_at": time.Now(), "expires_at": expires,
				"act": map[string]any{"uuid": uuid.NewString()}, "fields": fields()}})
		return b
	}
	send := func(b []byte, secret string, at time.Time) int {
		req := httptest.NewRequest("POST", "/", bytes.NewReader(b))
		sign.Sign([]string{secret}, "x", at, b).Apply(req.Header)
		w := httptest.NewRecorder()
		rcv.ServeHTTP(w, req)
		return w.Code
	}
	b := body(time.Now().Add(time.Hour))
	if c := send(b, other, time.Now()); c != 401 {
		t.Fatalf("wrong secret: %d", c)
	}
	if c := send(b, secret, time.Now().Add(-10*time.Minute)); c != 401 {
		t.Fatalf("stale timestamp: %d", c)
	}
	// Signed for b, but the body received differs by one byte.
	req := httptest.NewRequest("POST", "/", strings.NewReader(string(b)+" "))
	sign.Sign([]string{secret}, "x", time.Now(), b).Apply(req.Header)
	w := httptest.NewRecorder()
	rcv.ServeHTTP(w, req)
	if w.Code != 401 {
		t.Fatalf("altered body: %d", w.Code)
	}
	if len(api.all()) != 0 {
		t.Fatal("an unverified delivery caused a write")
	}
	// Expired before it arrived: acknowledged, nothing written.
	if c := send(body(time.Now().Add(-time.Second)), secret, time.Now()); c != 202 {
		t.Fatalf("expired: %d", c)
	}
	if d := <-done; d.status != 0 || len(api.all()) != 0 {
		t.Fatalf("expired event wrote back: %+v", d)
	}
	// Other event kinds are acknowledged and ignored.
	ob, _ := json.Marshal(map[string]any{"id": uuid.NewString(), "event": "act.created", "occurred_at": time.Now(), "data": map[string]any{}})
	if c := send(ob, secret, time.Now()); c != 202 {
		t.Fatalf("act.created: %d", c)
	}
}

// Concurrent duplicate deliveries of one event start the work once.
func TestReceiverDedupesConcurrentDuplicates(t *testing.T) {
	api := newFakeAPI(t)
	secret, _ := sign.NewSecret()
	done := make(chan doneEvent, 64)
	rcv, err := integration.New(integration.Config{Secrets: []string{secret}, BaseURL: api.URL, Token: "t",
		OnDone: func(id string, status int, err error) { done <- doneEvent{id, status, err} }})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"id": uuid.NewString(), "event": "act.fetch_data", "occurred_at": time.Now(),
		"data": map[string]any{"request_id": uuid.NewString(), "requested_at": time.Now(), "expires_at": time.Now().Add(time.Hour),
			"act": map[string]any{"uuid": uuid.NewString()}, "fields": fields()}})
	var wg sync.WaitGroup
	codes := make(chan int, 32)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := httptest.NewRequest("POST", "/", bytes.NewReader(b))
			sign.Sign([]string{secret}, "x", time.Now(), b).Apply(req.Header)
			w := httptest.NewRecorder()
			rcv.ServeHTTP(w, req)
			codes <- w.Code
		}()
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 202 {
			t.Fatalf("status %d", c)
		}
	}
	rcv.Close(context.Background())
	if n := len(api.all()); n != 1 {
		t.Fatalf("%d PUTs for one event delivered 32 times at once", n)
	}
	if len(done) != 1 {
		t.Fatalf("work ran %d times", len(done))
	}
}

// testPolicy is the operation policy the service runs with (the spec's).
func testPolicy(t testing.TB) *auth.Policy {
	t.Helper()
	p, err := authspec.Load()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
