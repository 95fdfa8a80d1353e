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

// emitDataUpdated sends act.data_updated for the data points of dps whose
// id is in changed (their values after the change, with their latest
// fetch: fetch when the caller has it, read otherwise), when there are any.
func (s *Store) emitDataUpdated(ctx context.Context, tx *gorm.DB, actUUID uuid.UUID, rid *uuid.UUID, dps []DataPoint, changed []int64, fetch map[int64]*FetchState, now time.Time) error {
	if len(changed) == 0 {
		return nil
	}
	if fetch == nil {
		var err error
		if fetch, err = latestFetch(ctx, tx, actUUID, changed, now); err != nil {
			return err
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
			return err
		}
		out.Data = append(out.Data, w)
	}
	return s.emit(ctx, tx, outbox.ActDataUpdated, now, out)
}

// emitCompleted sends fetch_request.completed when v, as of now, has no
// field left awaiting.
func (s *Store) emitCompleted(ctx context.Context, tx *gorm.DB, v *FetchView, now time.Time) error {
	if v.Status != RequestCompleted {
		return nil
	}
	return s.emit(ctx, tx, outbox.FetchRequestCompleted, now, models.FetchRequestCompletedPayload{FetchRequest: v.API()})
}

// emitBuiltinFills is the event step of CreateRequest for the fields the
// service filled itself: the values it wrote, and the request's completion
// when no external field awaits an integration.
func (s *Store) emitBuiltinFills(ctx context.Context, tx *gorm.DB, sel *fetchSelection, v *FetchView, now time.Time) error {
	rid := v.Request.ID
	if err := s.emitDataUpdated(ctx, tx, sel.act.UUID, &rid, sel.dps, v.filled, nil, now); err != nil {
		return err
	}
	return s.emitCompleted(ctx, tx, v, now)
}
