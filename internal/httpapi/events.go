package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// The events API: the tenant's events as their deliveries carry them
// (outbox.ListEvents; who may see what is the registry's rule).

// ListEvents is GET /events.
func (h *Handlers) ListEvents(ctx context.Context, req apiserver.ListEventsRequestObject) (apiserver.ListEventsResponseObject, error) {
	prm := req.Params
	pg, err := page.New(nil, prm.Limit)
	if err != nil {
		return nil, err
	}
	f := outbox.EventFilter{From: prm.CreatedAfter, Until: prm.CreatedBefore, Limit: pg.Limit,
		After: (*uuid.UUID)(prm.StartingAfter), Before: (*uuid.UUID)(prm.EndingBefore)}
	if prm.Type != nil {
		f.Kind = *prm.Type
	}
	list, more, err := h.svc.Webhooks.Events(ctx, auth.MustFromContext(ctx), f)
	if err != nil {
		return nil, err
	}
	out := apiserver.ListEvents200JSONResponse{Data: make([]models.Event, 0, len(list)), HasMore: more}
	for _, s := range list {
		v, err := eventView(s)
		if err != nil {
			return nil, err
		}
		out.Data = append(out.Data, v)
	}
	return out, nil
}

// GetEvent is GET /events/{id}.
func (h *Handlers) GetEvent(ctx context.Context, req apiserver.GetEventRequestObject) (apiserver.GetEventResponseObject, error) {
	s, err := h.svc.Webhooks.Event(ctx, auth.MustFromContext(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	v, err := eventView(*s)
	if err != nil {
		return nil, err
	}
	return apiserver.GetEvent200JSONResponse(v), nil
}

// eventView is the envelope of s's deliveries: the stored payload is the
// data object, its numbers kept as written.
func eventView(s outbox.Stored) (models.Event, error) {
	id, err := uuid.Parse(s.ID)
	if err != nil {
		return models.Event{}, fmt.Errorf("event %q: %w", s.ID, err)
	}
	var data map[string]any
	dec := json.NewDecoder(bytes.NewReader(s.Payload))
	dec.UseNumber()
	if err := dec.Decode(&data); err != nil {
		return models.Event{}, fmt.Errorf("event %s: stored payload: %w", s.ID, err)
	}
	return models.Event{Id: id, Event: s.Kind, OccurredAt: s.OccurredAt, Data: data}, nil
}
