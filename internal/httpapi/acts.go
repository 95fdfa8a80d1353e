package httpapi

import (
	"time"

	"context"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/acts"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/page"
)

// Acts: CRUD, finalize, duplicate, history and a client's latest act.
// Reads need acts:read; changes need acts:write and a member or admin role
// (enforced before these run, authorize.go). Only drafts change: a change to
// a final act is a 400 with errors.status.

func (h *Handlers) ListActs(ctx context.Context, req apiserver.ListActsRequestObject) (apiserver.ListActsResponseObject, error) {
	pg, err := page.New(req.Params.Page, req.Params.Limit)
	if err != nil {
		return nil, err
	}
	f := acts.Filter{ClientID: req.Params.ClientId, TemplateID: req.Params.TemplateId, UpdatedSince: req.Params.UpdatedSince}
	if req.Params.Status != nil {
		s := acts.Status(*req.Params.Status)
		f.Status = &s
	}
	list, total, err := h.svc.Acts.List(ctx, f, pg)
	if err != nil {
		return nil, err
	}
	out := apiserver.ListActs200JSONResponse{Data: make([]models.ActSummary, 0, len(list)), Meta: pageMeta(pg, total)}
	for i := range list {
		out.Data = append(out.Data, acts.APISummary(&list[i]))
	}
	if since := req.Params.UpdatedSince; since != nil {
		var last *time.Time
		if n := len(list); n > 0 {
			last = &list[n-1].UpdatedAt
		}
		out.Meta.NextUpdatedSince = nextSince(since, last)
	}
	return out, nil
}

func (h *Handlers) CreateAct(ctx context.Context, req apiserver.CreateActRequestObject) (apiserver.CreateActResponseObject, error) {
	p := auth.MustFromContext(ctx)
	d, err := h.svc.Acts.Create(ctx, p, req.Body.ClientId, req.Body.TemplateId, req.Body.Title)
	if err != nil {
		return nil, err
	}
	a, err := d.API()
	return apiserver.CreateAct201JSONResponse(a), err
}

func (h *Handlers) GetAct(ctx context.Context, req apiserver.GetActRequestObject) (apiserver.GetActResponseObject, error) {
	d, err := h.svc.Acts.Get(ctx, req.ActUuid)
	if err != nil {
		return nil, err
	}
	a, err := d.API()
	return apiserver.GetAct200JSONResponse(a), err
}

func (h *Handlers) UpdateAct(ctx context.Context, req apiserver.UpdateActRequestObject) (apiserver.UpdateActResponseObject, error) {
	p := auth.MustFromContext(ctx)
	d, err := h.svc.Acts.Update(ctx, p, req.ActUuid, req.Body.Title)
	if err != nil {
		return nil, err
	}
	a, err := d.API()
	return apiserver.UpdateAct200JSONResponse(a), err
}

func (h *Handlers) DeleteAct(ctx context.Context, req apiserver.DeleteActRequestObject) (apiserver.DeleteActResponseObject, error) {
	if err := h.svc.Acts.Delete(ctx, req.ActUuid); err != nil {
		return nil, err
	}
	return apiserver.DeleteAct204Response{}, nil
}

func (h *Handlers) FinalizeAct(ctx context.Context, req apiserver.FinalizeActRequestObject) (apiserver.FinalizeActResponseObject, error) {
	p := auth.MustFromContext(ctx)
	d, err := h.svc.Acts.Finalize(ctx, p, req.ActUuid)
	if err != nil {
		return nil, err
	}
	a, err := d.API()
	return apiserver.FinalizeAct200JSONResponse(a), err
}

func (h *Handlers) DuplicateAct(ctx context.Context, req apiserver.DuplicateActRequestObject) (apiserver.DuplicateActResponseObject, error) {
	p := auth.MustFromContext(ctx)
	d, err := h.svc.Acts.Duplicate(ctx, p, req.ActUuid)
	if err != nil {
		return nil, err
	}
	a, err := d.API()
	return apiserver.DuplicateAct201JSONResponse(a), err
}

func (h *Handlers) ListActHistory(ctx context.Context, req apiserver.ListActHistoryRequestObject) (apiserver.ListActHistoryResponseObject, error) {
	pg, err := page.New(req.Params.Page, req.Params.Limit)
	if err != nil {
		return nil, err
	}
	list, total, err := h.svc.Acts.History(ctx, req.ActUuid, pg)
	if err != nil {
		return nil, err
	}
	out := apiserver.ListActHistory200JSONResponse{Data: make([]models.HistoryEntry, 0, len(list)), Meta: pageMeta(pg, total)}
	for i := range list {
		out.Data = append(out.Data, acts.APIHistory(&list[i]))
	}
	return out, nil
}

func (h *Handlers) GetLatestClientAct(ctx context.Context, req apiserver.GetLatestClientActRequestObject) (apiserver.GetLatestClientActResponseObject, error) {
	d, err := h.svc.Acts.LatestForClient(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	a, err := d.API()
	return apiserver.GetLatestClientAct200JSONResponse(a), err
}
