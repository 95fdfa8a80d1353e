package httpapi

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/page"
)

// Tombstones of deleted clients and acts, for incremental sync
// (internal/tombstones).

// ListDeletedClients is GET /deleted/clients.
func (h *Handlers) ListDeletedClients(ctx context.Context, req apiserver.ListDeletedClientsRequestObject) (apiserver.ListDeletedClientsResponseObject, error) {
	p, err := page.New(req.Params.Page, req.Params.Limit)
	if err != nil {
		return nil, err
	}
	list, total, err := h.svc.Clients.Deleted(ctx, req.Params.DeletedSince, p)
	if err != nil {
		return nil, err
	}
	out := apiserver.ListDeletedClients200JSONResponse{Data: make([]models.DeletedClient, 0, len(list)), Meta: pageMeta(p, total)}
	for _, t := range list {
		id, err := strconv.ParseInt(t.ID, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("tombstone of client %q: %w", t.ID, err)
		}
		out.Data = append(out.Data, models.DeletedClient{Id: id, DeletedAt: t.DeletedAt.UTC()})
	}
	var last *time.Time
	if n := len(list); n > 0 {
		last = &list[n-1].DeletedAt
	}
	out.Meta.NextDeletedSince = nextSince(req.Params.DeletedSince, last)
	return out, nil
}

// ListDeletedActs is GET /deleted/acts.
func (h *Handlers) ListDeletedActs(ctx context.Context, req apiserver.ListDeletedActsRequestObject) (apiserver.ListDeletedActsResponseObject, error) {
	p, err := page.New(req.Params.Page, req.Params.Limit)
	if err != nil {
		return nil, err
	}
	list, total, err := h.svc.Acts.Deleted(ctx, req.Params.DeletedSince, p)
	if err != nil {
		return nil, err
	}
	out := apiserver.ListDeletedActs200JSONResponse{Data: make([]models.DeletedAct, 0, len(list)), Meta: pageMeta(p, total)}
	for _, t := range list {
		u, err := uuid.Parse(t.ID)
		if err != nil {
			return nil, fmt.Errorf("tombstone of act %q: %w", t.ID, err)
		}
		var client int64
		if t.ClientID != nil {
			client = *t.ClientID
		}
		out.Data = append(out.Data, models.DeletedAct{Uuid: u, ClientId: client, DeletedAt: t.DeletedAt.UTC()})
	}
	var last *time.Time
	if n := len(list); n > 0 {
		last = &list[n-1].DeletedAt
	}
	out.Meta.NextDeletedSince = nextSince(req.Params.DeletedSince, last)
	return out, nil
}
