package registry

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/counts"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// Delivery is one delivery log entry.
type Delivery struct {
	ID              string        `gorm:"column:id"`
	WebhookID       int64         `gorm:"column:webhook_id"`
	EventID         string        `gorm:"column:event_id"`
	Event           string        `gorm:"column:event"`
	Status          outbox.Status `gorm:"column:status"`
	Attempts        int           `gorm:"column:attempts"`
	LastStatusCode  *int          `gorm:"column:last_status_code"`
	LastError       *string       `gorm:"column:last_error"`
	ResponseExcerpt *string       `gorm:"column:response_excerpt"`
	LastAttemptAt   *time.Time    `gorm:"column:last_attempt_at"`
	NextAttemptAt   *time.Time    `gorm:"column:next_attempt_at"`
	CreatedAt       time.Time     `gorm:"column:created_at"`
}

const deliveryColumns = "deliveries.id, deliveries.webhook_id, deliveries.event_id, events.kind AS event, deliveries.status, " +
	"deliveries.attempts, deliveries.last_status_code, deliveries.last_error, deliveries.response_excerpt, " +
	"deliveries.last_attempt_at, deliveries.next_attempt_at, deliveries.created_at"

// deliveries reads the registration's delivery log: the live queue and the
// finished deliveries (the view delivery_log, migration 00090), named
// deliveries in the query.
func (s *Store) deliveries(ctx context.Context, q *gorm.DB, webhookID int64) *gorm.DB {
	return tenant.Scope(ctx, q.Table("delivery_log AS deliveries")).
		Joins("JOIN events ON events.tenant_id = deliveries.tenant_id AND events.id = deliveries.event_id").
		Where("deliveries.webhook_id = ?", webhookID)
}

// Deliveries returns a page of the registration's delivery log, newest
// first.
func (s *Store) Deliveries(ctx context.Context, p *auth.Principal, webhookID int64, pg page.Request) (ds []Delivery, total int64, err error) {
	defer apperr.Wrap(&err, "registry.Deliveries(%d)", webhookID)
	if _, err := s.Get(ctx, p, webhookID); err != nil {
		return nil, 0, err
	}
	if total, err = counts.Total(ctx, s.db.DB, counts.Deliveries(webhookID)); err != nil {
		return nil, 0, err
	}
	if pg.Beyond(total) {
		return []Delivery{}, total, nil
	}
	err = s.deliveries(ctx, s.db.DB, webhookID).Select(deliveryColumns).
		Order("deliveries.created_at DESC, deliveries.id").
		Limit(pg.Limit).Offset(pg.Offset()).Scan(&ds).Error
	return ds, total, err
}

// Redeliver queues the delivery's event again for this registration: the
// same event id and payload, signed afresh, attempted now with a fresh
// retry schedule (attempts restart at 0). A delivery in flight, or one of
// an inactive registration, is refused with 400.
func (s *Store) Redeliver(ctx context.Context, p *auth.Principal, webhookID int64, deliveryID uuid.UUID) (d *Delivery, err error) {
	defer apperr.Wrap(&err, "registry.Redeliver(%d, %s)", webhookID, deliveryID)
	return s.queue(ctx, p, auth.OpRedeliverWebhookDelivery, webhookID, func(tx *gorm.DB, w *Webhook, now time.Time) (string, error) {
		// Not locked (a view over two tables cannot be): the registration
		// is, which serializes redeliveries, and Requeue leaves a delivery
		// that a worker has claimed since alone.
		var cur Delivery
		err := s.deliveries(ctx, tx, webhookID).Select(deliveryColumns).
			Where("deliveries.id = ?", deliveryID.String()).Take(&cur).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return "", apperr.Ef(apperr.NotFound, "delivery %s not found", deliveryID)
		}
		if err != nil {
			return "", err
		}
		if !w.Active {
			return "", apperr.E(apperr.Invalid, "The webhook registration is inactive; activate it before redelivering.")
		}
		if cur.Status == outbox.Delivering {
			return "", apperr.E(apperr.Invalid, "An attempt of this delivery is in flight; try again when it has finished.")
		}
		return deliveryID.String(), outbox.Requeue(tx, tenant.ID(ctx), webhookID, deliveryID.String(), now)
	})
}

// queue is what queueing a delivery by hand takes: the caller may change
// the registration, which stays locked while fn queues a delivery and
// returns its id; the delivery is read back, and the workers are woken
// once it has committed.
func (s *Store) queue(ctx context.Context, p *auth.Principal, op auth.Op, webhookID int64, fn func(tx *gorm.DB, w *Webhook, now time.Time) (string, error)) (*Delivery, error) {
	if err := s.mayChange(p, op); err != nil {
		return nil, err
	}
	now := s.clock()
	var out Delivery
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		w, err := s.get(ctx, s.db.ForUpdate(tx), p, webhookID)
		if err != nil {
			return err
		}
		id, err := fn(tx, w, now)
		if err != nil {
			return err
		}
		s.wakeAfterCommit(tx)
		return s.deliveries(ctx, tx, webhookID).Select(deliveryColumns).Where("deliveries.id = ?", id).Take(&out).Error
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// DeliveryDetail is one delivery with its event's payload and every
// attempt made, oldest first (redeliveries included).
type DeliveryDetail struct {
	Delivery
	Payload    string                   `gorm:"column:payload"`
	OccurredAt time.Time                `gorm:"column:occurred_at"`
	Attempts   []outbox.RecordedAttempt `gorm:"-"`
}

// DeliveryDetail returns the registration's delivery deliveryID with its
// payload and attempts, to those who may see the registration.
func (s *Store) DeliveryDetail(ctx context.Context, p *auth.Principal, webhookID int64, deliveryID uuid.UUID) (d *DeliveryDetail, err error) {
	defer apperr.Wrap(&err, "registry.DeliveryDetail(%d, %s)", webhookID, deliveryID)
	if _, err := s.Get(ctx, p, webhookID); err != nil {
		return nil, err
	}
	var out DeliveryDetail
	err = s.deliveries(ctx, s.db.DB, webhookID).Select(deliveryColumns+", events.payload, events.occurred_at").
		Where("deliveries.id = ?", deliveryID.String()).Take(&out).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.Ef(apperr.NotFound, "delivery %s not found", deliveryID)
	}
	if err != nil {
		return nil, err
	}
	if out.Attempts, err = outbox.Attempts(ctx, s.db.DB, tenant.ID(ctx), webhookID, out.ID); err != nil {
		return nil, err
	}
	return &out, nil
}

// PendingDeliveries counts the registration's deliveries that still wait
// for an attempt or have one in flight: what disabling or deleting it
// cancels.
func (s *Store) PendingDeliveries(ctx context.Context, p *auth.Principal, webhookID int64) (n int64, err error) {
	defer apperr.Wrap(&err, "registry.PendingDeliveries(%d)", webhookID)
	if _, err := s.Get(ctx, p, webhookID); err != nil {
		return 0, err
	}
	return outbox.LiveCount(ctx, s.db.DB, tenant.ID(ctx), webhookID)
}

// ReplayLimit is the most failed deliveries one ReplayFailed queues again.
const ReplayLimit = 1000

// ReplayFailed queues again every failed delivery of the registration
// created since since (at most ReplayLimit, oldest first), as Redeliver
// does one, and returns how many. Same rules as Redeliver: the caller may
// change the registration, and it must be active.
func (s *Store) ReplayFailed(ctx context.Context, p *auth.Principal, webhookID int64, since time.Time) (n int, err error) {
	defer apperr.Wrap(&err, "registry.ReplayFailed(%d)", webhookID)
	if err := s.mayChange(p, auth.OpRedeliverWebhookDelivery); err != nil {
		return 0, err
	}
	now := s.clock()
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		w, err := s.get(ctx, s.db.ForUpdate(tx), p, webhookID)
		if err != nil {
			return err
		}
		if !w.Active {
			return apperr.E(apperr.Invalid, "The webhook registration is inactive; activate it before replaying.")
		}
		var ids []string
		err = tenant.Scope(ctx, tx.Table("delivery_history")).
			Where("webhook_id = ? AND status = ? AND created_at >= ?", webhookID, string(outbox.Failed), since.UTC()).
			Order("created_at").Limit(ReplayLimit).Pluck("id", &ids).Error
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := outbox.Requeue(tx, tenant.ID(ctx), webhookID, id, now); err != nil {
				return err
			}
		}
		n = len(ids)
		if n > 0 {
			s.wakeAfterCommit(tx)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
