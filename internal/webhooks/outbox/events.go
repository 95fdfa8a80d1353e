package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/tenant"
)

// Stored is an event as it was written: the envelope of its deliveries is
// built from ID, Kind, OccurredAt and Payload (verbatim).
type Stored struct {
	ID         string
	Kind       string
	OccurredAt time.Time
	Payload    json.RawMessage
	Seq        int64
}

// EventFilter narrows ListEvents; zero fields do not filter.
type EventFilter struct {
	Kind string
	// From keeps events that occurred at or after it, Until those before it.
	From, Until *time.Time
	// After lists the events older than this event (the next page, newest
	// first); Before the events newer than it, the ones nearest to it. At
	// most one is set.
	After, Before *uuid.UUID
	// OnlyUser, when not nil, hides the events restricted to another user
	// (a webhook.test event of someone else's registration).
	OnlyUser *int64
	// Kinds, when not nil, keeps only the events of these kinds (the ones
	// whose object the caller may read; empty: none).
	Kinds []string
	Limit int
}

type storedRow struct {
	ID         string    `gorm:"column:id"`
	Kind       string    `gorm:"column:kind"`
	OccurredAt time.Time `gorm:"column:occurred_at"`
	Payload    string    `gorm:"column:payload"`
	Seq        int64     `gorm:"column:seq"`
}

func (r storedRow) stored() Stored {
	return Stored{ID: r.ID, Kind: r.Kind, OccurredAt: r.OccurredAt.UTC(), Payload: json.RawMessage(r.Payload), Seq: r.Seq}
}

// visibleEvents scopes q to the tenant's numbered events onlyUser may see,
// of kinds when it is not nil.
func visibleEvents(ctx context.Context, q *gorm.DB, onlyUser *int64, kinds []string) *gorm.DB {
	q = tenant.Scope(ctx, q.Table("events")).Where("seq IS NOT NULL")
	if onlyUser != nil {
		q = q.Where("(owner_user_id IS NULL OR owner_user_id = ?)", *onlyUser)
	}
	if kinds != nil {
		if len(kinds) == 0 {
			return q.Where("1 = 0")
		}
		q = q.Where("kind IN ?", kinds)
	}
	return q
}

// GetEvent returns one of the tenant's events; another tenant's, a purged
// one, one hidden from onlyUser or (kinds not nil) one of another kind is
// NotFound.
func GetEvent(ctx context.Context, tx *gorm.DB, id uuid.UUID, onlyUser *int64, kinds []string) (*Stored, error) {
	var r storedRow
	err := visibleEvents(ctx, tx.WithContext(ctx), onlyUser, kinds).
		Select("id, kind, occurred_at, payload, seq").Where("id = ?", id.String()).Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.Ef(apperr.NotFound, "event %s not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("outbox: get event %s: %w", id, err)
	}
	s := r.stored()
	return &s, nil
}

// ListEvents returns a page of the tenant's events, newest first, and
// whether more follow in the direction read. It pages by seq (SeqName), so
// a page costs its rows from the (tenant_id, seq) or (tenant_id, kind, seq)
// index whatever the list's length; there is no total (counting a tenant's
// events would read all of them). A time bound also bounds seq
// (page.TimeRange.WhereNumbered), so a page far back in time starts its
// scan near its first row, not at the newest event.
func ListEvents(ctx context.Context, tx *gorm.DB, f EventFilter) (_ []Stored, more bool, err error) {
	if f.After != nil && f.Before != nil {
		return nil, false, apperr.E(apperr.Invalid, "Give starting_after or ending_before, not both.")
	}
	if f.Limit < 1 {
		f.Limit = 25
	}
	q := visibleEvents(ctx, tx.WithContext(ctx), f.OnlyUser, f.Kinds).Select("id, kind, occurred_at, payload, seq")
	if f.Kind != "" {
		q = q.Where("kind = ?", f.Kind)
	}
	q = page.TimeRange{From: f.From, Until: f.Until}.WhereNumbered(ctx, q, page.Events)
	asc := false
	for _, c := range []struct {
		id    *uuid.UUID
		param string
		op    string
	}{{f.After, "starting_after", "<"}, {f.Before, "ending_before", ">"}} {
		if c.id == nil {
			continue
		}
		cur, err := GetEvent(ctx, tx, *c.id, f.OnlyUser, f.Kinds)
		if apperr.Is(err, apperr.NotFound) {
			return nil, false, apperr.Ef(apperr.Invalid, "No event %s to page from: it does not exist or is past the retention.", *c.id).
				WithField(c.param, "unknown event id")
		}
		if err != nil {
			return nil, false, err
		}
		q = q.Where("seq "+c.op+" ?", cur.Seq)
		asc = c.op == ">"
	}
	order := "seq DESC"
	if asc {
		order = "seq ASC"
	}
	var rows []storedRow
	if err := q.Order(order).Limit(f.Limit + 1).Find(&rows).Error; err != nil {
		return nil, false, fmt.Errorf("outbox: list events: %w", err)
	}
	more = len(rows) > f.Limit
	if more {
		rows = rows[:f.Limit]
	}
	out := make([]Stored, len(rows))
	for i, r := range rows {
		if asc { // ending_before: the nearest newer events, still newest first
			out[len(rows)-1-i] = r.stored()
		} else {
			out[i] = r.stored()
		}
	}
	return out, more, nil
}
