package webhooks_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/authspec"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks"
	"github.com/finsvc/finsvc/internal/webhooks/delivery"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/pkg/webhooks/sign"
)

func TestNewRefusesAMissingGlobalSecret(t *testing.T) {
	cfg := config.Default()
	cfg.Secret = ""
	if _, err := webhooks.New(nil, cfg, nil, nil); err == nil || !strings.Contains(err.Error(), "FINSVC_SECRET") {
		t.Fatalf("New without a secret: %v", err)
	}
}

// The parts New returns share one sealing key and one wake-up: a secret the
// registry sealed is opened by the worker, which signs with it, and an
// event the outbox writes wakes the worker without polling.
func TestNewWiresOneContext(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, tn := testdb.NewTenant(t, d, "acme")
		uid, err := db.NextID(d.DB, tn.ID, "users")
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Table("users").Create(map[string]any{"tenant_id": tn.ID, "id": uid, "email": "m@acme", "name": "M", "role": "member", "password_hash": "!"}).Error; err != nil {
			t.Fatal(err)
		}
		type got struct {
			header http.Header
			body   []byte
		}
		arrived := make(chan got, 1)
		rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			arrived <- got{r.Header.Clone(), b}
			w.WriteHeader(http.StatusNoContent)
		}))
		defer rc.Close()

		cfg := config.Default()
		cfg.Secret = "webhooks-test-global-secret-0123456789"
		cfg.WebhookAllowPrivate = true // the receiver listens on loopback
		if d.Dialect == db.Postgres {
			_, cfg.DatabaseDirectURL = testdb.URLs(t, d) // the worker's LISTEN
		}
		wh, err := webhooks.New(d, cfg, testdb.Logger(), policy(t), deliveryPollsNever())
		if err != nil {
			t.Fatal(err)
		}
		reg, secret, err := wh.Registry.Create(ctx, &auth.Principal{TenantID: tn.ID, UserID: uid, Role: "member"}, outbox.ActCreated, rc.URL)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Worker.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer wh.Worker.Stop(context.Background())
		if err := d.Tx(ctx, func(tx *gorm.DB) error {
			_, err := wh.Outbox.Emit(ctx, tx, outbox.Event{Kind: outbox.ActCreated, Data: map[string]any{"n": 1}})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		select {
		case g := <-arrived:
			if err := sign.Verify(secret, g.header.Get(sign.HeaderSignature), g.body, time.Now()); err != nil {
				t.Fatalf("registration %d: signature: %v", reg.ID, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no delivery arrived")
		}
	})
}

// deliveryPollsNever leaves the worker to wake-ups alone.
func deliveryPollsNever() delivery.Option { return delivery.WithPollInterval(time.Hour) }

// policy is the operation policy the service runs with (the spec's).
func policy(t *testing.T) *auth.Policy {
	t.Helper()
	p, err := authspec.Load()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
