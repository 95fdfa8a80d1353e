package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// TestMessage is the message of every webhook.test event.
const TestMessage = "A test event from finsvc: your endpoint received and can verify it."

// Test queues a webhook.test event for the registration alone and returns
// its delivery. Same rule as Redeliver: the caller must be allowed to
// change the registration, and it must be active.
func (s *Store) Test(ctx context.Context, p *auth.Principal, webhookID int64) (d *Delivery, err error) {
	defer apperr.Wrap(&err, "registry.Test(%d)", webhookID)
	return s.TestExample(ctx, p, webhookID, outbox.WebhookTest, nil)
}

// TestExample is Test with an event of kind (one of outbox.Kinds, or
// outbox.WebhookTest for the default test) whose data is example, an
// example of that kind from the event catalog: the registration's endpoint
// receives the event as it would a real one, alone, with a new event id.
// A webhook.test event's data is always the standard one (example is
// ignored).
func (s *Store) TestExample(ctx context.Context, p *auth.Principal, webhookID int64, kind string, example json.RawMessage) (d *Delivery, err error) {
	defer apperr.Wrap(&err, "registry.TestExample(%d, %s)", webhookID, kind)
	var data any = map[string]any{"webhook_id": webhookID, "message": TestMessage}
	if kind != outbox.WebhookTest {
		if !outbox.ValidKind(kind) {
			return nil, apperr.E(apperr.Invalid, "The event type is unknown.").WithField("event", "must be an event type of the catalog")
		}
		if !json.Valid(example) || !bytes.HasPrefix(bytes.TrimSpace(example), []byte("{")) {
			return nil, apperr.E(apperr.Invalid, "The event type has no example to send.").WithField("event", "has no example payload")
		}
		data = example
	}
	return s.queue(ctx, p, auth.OpTestWebhook, webhookID, func(tx *gorm.DB, w *Webhook, now time.Time) (string, error) {
		if !w.Active {
			return "", apperr.E(apperr.Invalid, "The webhook registration is inactive; activate it before testing.").
				WithField("active", "the registration is inactive")
		}
		return outbox.EmitExampleTo(ctx, tx, webhookID, w.CreatedByUserID, kind, data, now)
	})
}
