package acts

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// The act.* and fetch_request.* events other than act.created,
// act.duplicated and act.fetch_data (store.go, fetch.go). Each is emitted
// inside the transaction of the change it reports, so a rolled-back change
// leaves no event.

func (s *Store) emit(ctx context.Context, tx *gorm.DB, kind string, at time.Time, data any) error {
	_, err := s.outbox().Emit(ctx, tx, outbox.Event{Kind: kind, OccurredAt: at, Data: data})
	return err
}

// emitAct sends kind (act.updated, act.finalized) with d as the API shows it.
func (s *Store) emitAct(ctx context.Context, tx *gorm.DB, kind string, d *Detail) error {
	wire, err := d.API()
	if err != nil {
		return err
	}
	return s.emit(ctx, tx, kind, d.Act.UpdatedAt, models.ActEventPayload{Act: wire})
}

// dataUpdated is the act.data_updated event for the data points of dps
// whose id is in changed (their values after the change, with their latest
// fetch: fetch when the caller has it, read otherwise); nil when there are
// none.
func dataUpdated(ctx context.Context, tx *gorm.DB, actUUID uuid.UUID, rid *uuid.UUID, dps []DataPoint, changed []int64, fetch map[int64]*FetchState, now time.Time) (*outbox.Event, error) {
	if len(changed) == 0 {
		return nil, nil
	}
	if fetch == nil {
		var err error
		if fetch, err = latestFetch(ctx, tx, actUUID, changed, now); err != nil {
			return nil, err
		}
	}
	out := models.ActDataUpdatedPayload{ActUuid: actUUID, FetchRequestId: rid, Data: []models.DataPoint{}}
	for i := range dps {
		d := &dps[i]
		if !slices.Contains(changed, d.ID) || slices.ContainsFunc(out.Data, func(x models.DataPoint) bool { return x.Id == d.ID }) {
			continue
		}
		w, err := APIDataPoint(d, fetch[d.ID])
		if err != nil {
			return nil, err
		}
		out.Data = append(out.Data, w)
	}
	return &outbox.Event{Kind: outbox.ActDataUpdated, OccurredAt: now, Data: out}, nil
}

// completed is the fetch_request.completed event of v when v, as of now,
// has no field left awaiting; nil otherwise.
func completed(v *FetchView, now time.Time) *outbox.Event {
	if v.Status != RequestCompleted {
		return nil
	}
	return &outbox.Event{Kind: outbox.FetchRequestCompleted, OccurredAt: now,
		Data: models.FetchRequestCompletedPayload{FetchRequest: v.API()}}
}

// emitBoth emits the events of a change that are not nil, together
// (outbox.EmitAll: one change, one set of statements).
func (s *Store) emitBoth(ctx context.Context, tx *gorm.DB, evs ...*outbox.Event) error {
	var out []outbox.Event
	for _, ev := range evs {
		if ev != nil {
			out = append(out, *ev)
		}
	}
	_, err := s.outbox().EmitAll(ctx, tx, out...)
	return err
}

// emitBuiltinFills is the event step of CreateRequest for the fields the
// service filled itself: the values it wrote, and the request's completion
// when no external field awaits an integration.
func (s *Store) emitBuiltinFills(ctx context.Context, tx *gorm.DB, sel *fetchSelection, v *FetchView, now time.Time) error {
	rid := v.Request.ID
	ev, err := dataUpdated(ctx, tx, sel.act.UUID, &rid, sel.dps, v.filled, nil, now)
	if err != nil {
		return err
	}
	return s.emitBoth(ctx, tx, ev, completed(v, now))
}
