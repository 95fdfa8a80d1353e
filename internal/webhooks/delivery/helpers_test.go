package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/authspec"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/keyring"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/delivery"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
	"github.com/finsvc/finsvc/pkg/webhooks/sign"
)

const globalSecret = "delivery-test-global-secret-0123456789"

// clock is a controllable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

// newClock starts a little ahead of the wall clock, so that events written
// now (the outbox stamps them with the real time) are already due.
func newClock() *clock { return &clock{t: time.Now().UTC().Add(2 * time.Second).Truncate(time.Second)} }

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// fixture is one tenant with a user and the registration store.
type fixture struct {
	t      testing.TB
	db     *db.DB
	ctx    context.Context
	tid    int64
	userID int64
	store  *registry.Store
	cfg    *config.Config
}

func newFixture(t testing.TB, d *db.DB) *fixture {
	t.Helper()
	ctx, tn := testdb.NewTenant(t, d, "acme")
	uid, err := db.NextID(d.DB, tn.ID, "users")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Table("users").Create(map[string]any{"tenant_id": tn.ID, "id": uid, "email": "m@acme", "name": "M", "role": "member", "password_hash": "!"}).Error; err != nil {
		t.Fatal(err)
	}
	box, err := sealing.New(keyring.MustNew(globalSecret))
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Secret = globalSecret
	cfg.WebhookAllowPrivate = true
	if d.Dialect == db.Postgres {
		// The worker LISTENs on a session of its own (direct, even when
		// the suite runs behind PgBouncer).
		_, cfg.DatabaseDirectURL = testdb.URLs(t, d)
	}
	return &fixture{t: t, db: d, ctx: ctx, tid: tn.ID, userID: uid, cfg: cfg,
		store: registry.New(d, box, registry.Options{Policy: testPolicy(t), AllowPrivate: true})}
}

func (f *fixture) register(event, target string) (*registry.Webhook, string) {
	f.t.Helper()
	w, secret, err := f.store.Create(f.ctx, f.owner(), event, target)
	if err != nil {
		f.t.Fatal(err)
	}
	return w, secret
}

// emit writes n events of kind in one transaction and returns their ids.
func (f *fixture) emit(kind string, n int, expires *time.Time, notifier outbox.Notifier) []string {
	f.t.Helper()
	ids := make([]string, n)
	err := f.db.Tx(f.ctx, func(tx *gorm.DB) error {
		for i := range ids {
			id := uuid.New()
			ids[i] = id.String()
			ob := &outbox.Outbox{Policy: outbox.Policy{AllowHTTP: true}, Notifier: notifier}
			if _, err := ob.Emit(f.ctx, tx, outbox.Event{ID: id, Kind: kind, ExpiresAt: expires,
				Data: map[string]any{"seq": i, "act": map[string]any{"uuid": uuid.NewString()}}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return ids
}

func (f *fixture) worker(opts ...delivery.Option) *delivery.Worker {
	f.t.Helper()
	// The worker's box comes from f.cfg.Secret, which a test may change to
	// play a misconfigured replica.
	box, err := sealing.New(keyring.MustNew(f.cfg.Secret))
	if err != nil {
		f.t.Fatal(err)
	}
	w, err := delivery.NewWorker(f.db, box, f.cfg, testdb.Logger(), opts...)
	if err != nil {
		f.t.Fatal(err)
	}
	return w
}

type row struct {
	ID              string        `gorm:"column:id"`
	EventID         string        `gorm:"column:event_id"`
	WebhookID       int64         `gorm:"column:webhook_id"`
	Status          outbox.Status `gorm:"column:status"`
	Attempts        int           `gorm:"column:attempts"`
	NextAttemptAt   *time.Time    `gorm:"column:next_attempt_at"`
	LeaseOwner      *string       `gorm:"column:lease_owner"`
	LeaseExpiresAt  *time.Time    `gorm:"column:lease_expires_at"`
	LastStatusCode  *int          `gorm:"column:last_status_code"`
	LastError       *string       `gorm:"column:last_error"`
	ResponseExcerpt *string       `gorm:"column:response_excerpt"`
}

func (f *fixture) rows() []row {
	f.t.Helper()
	var rs []row
	if err := f.db.Table("delivery_log").Where("tenant_id = ?", f.tid).Order("created_at, id").Scan(&rs).Error; err != nil {
		f.t.Fatal(err)
	}
	return rs
}

func (f *fixture) row(eventID string) row {
	f.t.Helper()
	for _, r := range f.rows() {
		if r.EventID == eventID {
			return r
		}
	}
	f.t.Fatalf("no delivery for event %s", eventID)
	return row{}
}

// received is one request that reached the receiver.
type received struct {
	Header http.Header
	Body   []byte
	Env    struct {
		ID         string          `json:"id"`
		Event      string          `json:"event"`
		OccurredAt time.Time       `json:"occurred_at"`
		Data       json.RawMessage `json:"data"`
	}
}

// receiver records deliveries and detects concurrent attempts of one event.
type receiver struct {
	*httptest.Server
	mu        sync.Mutex
	got       []received
	byID      map[string]int
	inflight  map[string]int
	overlaps  atomic.Int64
	respond   func(w http.ResponseWriter, r *received) // nil: 202
	arrived   chan string                              // event ids, if not nil
	hold      func(id string)                          // runs while in flight
	delivered atomic.Int64
}

func newReceiver(t testing.TB, tls bool) *receiver {
	rc := &receiver{byID: map[string]int{}, inflight: map[string]int{}}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rec received
		rec.Header = r.Header.Clone()
		rec.Body, _ = io.ReadAll(r.Body)
		_ = json.Unmarshal(rec.Body, &rec.Env)
		id := r.Header.Get(sign.HeaderWebhookID)
		rc.mu.Lock()
		rc.inflight[id]++
		if rc.inflight[id] > 1 {
			rc.overlaps.Add(1)
		}
		rc.mu.Unlock()
		if rc.arrived != nil {
			rc.arrived <- id
		}
		if rc.hold != nil {
			rc.hold(id)
		}
		rc.mu.Lock()
		rc.inflight[id]--
		rc.got = append(rc.got, rec)
		rc.byID[id]++
		rc.mu.Unlock()
		if rc.respond != nil {
			rc.respond(w, &rec)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, `{"ok":true}`)
		rc.delivered.Add(1)
	})
	if tls {
		rc.Server = httptest.NewTLSServer(h)
	} else {
		rc.Server = httptest.NewServer(h)
	}
	t.Cleanup(rc.Server.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

func fixedRand() float64 { return 0.5 } // no jitter: exactly the schedule

func mustEqual[T comparable](t testing.TB, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func intp(p *int) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprint(*p)
}

// owner is the member that registers the fixture's webhooks.
func (f *fixture) owner() *auth.Principal {
	return &auth.Principal{TenantID: f.tid, UserID: f.userID, Role: "member", ClientID: "app", Scopes: auth.AllScopes}
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
