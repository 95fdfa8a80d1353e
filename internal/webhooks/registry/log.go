package registry

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// DeliveryFilter narrows a registration's delivery log (FindDeliveries);
// zero fields do not filter.
type DeliveryFilter struct {
	// Status is one of outbox.Statuses.
	Status string
	// Event is an event kind (outbox.Kinds or outbox.WebhookTest).
	Event string
	// From keeps deliveries created at or after it, Until those created
	// before it.
	From, Until *time.Time
	// After lists the deliveries older than this one (the next page,
	// newest first); Before those newer than it, the ones nearest to it
	// (the previous page). At most one is set.
	After, Before *uuid.UUID
	// Limit is the page size, 1..page.MaxLimit (0: page.DefaultLimit).
	Limit int
}

// Validate refuses what no delivery can match, with one message per
// field, as Invalid.
func (f DeliveryFilter) Validate() error {
	fe := apperr.FieldErrors{}
	if f.Status != "" && !outbox.ValidStatus(f.Status) {
		fe.Add("status", fmt.Sprintf("must be one of %v", outbox.Statuses))
	}
	if f.Event != "" && !outbox.ValidKind(f.Event) && f.Event != outbox.WebhookTest {
		fe.Add("event", "must be an event type of the catalog")
	}
	if f.From != nil && f.Until != nil && !f.From.Before(*f.Until) {
		fe.Add("to", "must be later than the start of the range")
	}
	if f.After != nil && f.Before != nil {
		fe.Add("before", "cannot be combined with after")
	}
	if f.Limit < 0 || f.Limit > page.MaxLimit {
		fe.Add("limit", fmt.Sprintf("must be between 1 and %d", page.MaxLimit))
	}
	return fe.Err(apperr.Invalid, "The filter is invalid.")
}

// FindDeliveries returns a page of the registration's delivery log that
// matches f, newest first (by creation, then id), and whether more follow
// in the direction read.
//
// It pages by cursor, never by OFFSET: a page starts after (or before) a
// delivery of the log, whose (created_at, id) bounds the read, so a deep
// page costs what the first one does. created_at is also an index bound
// (the log's indexes are (tenant_id, webhook_id, created_at)), and the
// cursor's values are read by the statement itself, so no time is
// rebound from Go (SQLite compares stored text). A status filter reads
// only the table that status lives in (live: deliveries; final:
// delivery_history); the event filter is checked on the rows the index
// yields (a registration receives its one kind and test events).
func (s *Store) FindDeliveries(ctx context.Context, p *auth.Principal, webhookID int64, f DeliveryFilter) (ds []Delivery, more bool, err error) {
	defer apperr.Wrap(&err, "registry.FindDeliveries(%d)", webhookID)
	if err := f.Validate(); err != nil {
		return nil, false, err
	}
	if f.Limit == 0 {
		f.Limit = page.DefaultLimit
	}
	if _, err := s.Get(ctx, p, webhookID); err != nil {
		return nil, false, err
	}
	table := "delivery_log"
	if f.Status != "" {
		table = "deliveries"
		if outbox.Status(f.Status).Final() {
			table = "delivery_history"
		}
	}
	q := tenant.Scope(ctx, s.db.WithContext(ctx).Table(table+" AS deliveries")).
		Joins("JOIN events ON events.tenant_id = deliveries.tenant_id AND events.id = deliveries.event_id").
		Where("deliveries.webhook_id = ?", webhookID).Select(deliveryColumns)
	if f.Status != "" {
		q = q.Where("deliveries.status = ?", f.Status)
	}
	if f.Event != "" {
		q = q.Where("events.kind = ?", f.Event)
	}
	q = page.TimeRange{From: f.From, Until: f.Until}.Where(q, "deliveries.created_at")
	asc := false
	for _, c := range []struct {
		id    *uuid.UUID
		field string
		op    string
	}{{f.After, "after", "<"}, {f.Before, "before", ">"}} {
		if c.id == nil {
			continue
		}
		var n int64
		err := tenant.Scope(ctx, s.db.WithContext(ctx).Table("delivery_log")).
			Where("webhook_id = ? AND id = ?", webhookID, c.id.String()).Count(&n).Error
		if err != nil {
			return nil, false, err
		}
		if n == 0 {
			return nil, false, apperr.Ef(apperr.Invalid, "No delivery %s to page from: it is not in this log (deleted, or past the retention).", *c.id).
				WithField(c.field, "unknown delivery id")
		}
		// Uncorrelated, so that PostgreSQL reads the cursor once and uses
		// its time as the index bound.
		cur := "(SELECT c.%s FROM delivery_log c WHERE c.tenant_id = ? AND c.webhook_id = ? AND c.id = ?)"
		at, id := fmt.Sprintf(cur, "created_at"), fmt.Sprintf(cur, "id")
		arg := []any{tenant.ID(ctx), webhookID, c.id.String()}
		// The first condition bounds the index range; the second breaks
		// ties between deliveries created at the same instant.
		q = q.Where("deliveries.created_at "+c.op+"= "+at+" AND (deliveries.created_at "+c.op+" "+at+" OR deliveries.id "+c.op+" "+id+")",
			append(append(append([]any{}, arg...), arg...), arg...)...)
		asc = c.op == ">"
	}
	order := "deliveries.created_at DESC, deliveries.id DESC"
	if asc {
		order = "deliveries.created_at ASC, deliveries.id ASC"
	}
	if err := q.Order(order).Limit(f.Limit + 1).Scan(&ds).Error; err != nil {
		return nil, false, err
	}
	more = len(ds) > f.Limit
	if more {
		ds = ds[:f.Limit]
	}
	if asc { // the nearest newer deliveries, still shown newest first
		for i, j := 0, len(ds)-1; i < j; i, j = i+1, j-1 {
			ds[i], ds[j] = ds[j], ds[i]
		}
	}
	if ds == nil {
		ds = []Delivery{}
	}
	return ds, more, nil
}

// Health is a registration's attempts over the last 24 hours (by hour)
// and the last 7 days (by 6 hours), for its health charts.
type Health struct {
	Day, Week []outbox.Bucket
}

// Health windows: what the console's charts show.
const (
	DayBucket   = time.Hour
	DayBuckets  = 24
	WeekBucket  = 6 * time.Hour
	WeekBuckets = 28
)

// AttemptHealth aggregates the registration's attempts up to now, to
// those who may see it.
func (s *Store) AttemptHealth(ctx context.Context, p *auth.Principal, webhookID int64, now time.Time) (h *Health, err error) {
	defer apperr.Wrap(&err, "registry.AttemptHealth(%d)", webhookID)
	if _, err := s.Get(ctx, p, webhookID); err != nil {
		return nil, err
	}
	h = &Health{}
	tid := tenant.ID(ctx)
	if h.Day, err = outbox.AttemptBuckets(ctx, s.db.DB, tid, webhookID, now, DayBucket, DayBuckets); err != nil {
		return nil, err
	}
	if h.Week, err = outbox.AttemptBuckets(ctx, s.db.DB, tid, webhookID, now, WeekBucket, WeekBuckets); err != nil {
		return nil, err
	}
	return h, nil
}
