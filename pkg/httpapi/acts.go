package httpapi

import (
	"context"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/pkg/acts"
	"github.com/finsvc/finsvc/pkg/auth"
	"github.com/finsvc/finsvc/pkg/page"
	"github.com/finsvc/finsvc/pkg/webhooks/outbox"
)

// Acts: CRUD, finalize, duplicate, history and a client's latest act
// (DESIGN section 4). Reads need acts:read; changes need acts:write and a
// member or admin role. Only drafts change: a change to a final act is a
// 400 with errors.status.

// eventOutbox is the outbox the acts and fetch flow write events to.
func (h *Handlers) eventOutbox() *outbox.Outbox {
	if h.deps.Outbox != nil {
		return h.deps.Outbox
	}
	return &outbox.Outbox{Policy: outbox.Policy{AllowHTTP: h.deps.Config.WebhookAllowPrivate}}
}

func (h *Handlers) actStore() *acts.Store {
	return &acts.Store{DB: h.deps.DB, Outbox: h.eventOutbox(), Window: h.deps.Config.FetchWindow, Clock: h.deps.Now}
}

func (h *Handlers) ListActs(ctx context.Context, req apiserver.ListActsRequestObject) (apiserver.ListActsResponseObject, error) {
	if _, err := auth.Require(ctx, auth.ScopeActsRead, auth.Read); err != nil {
		return nil, err
	}
	pg, err := page.New(req.Params.Page, req.Params.Limit)
	if err != nil {
		return nil, err
	}
	f := acts.Filter{ClientID: req.Params.ClientId}
	if req.Params.Status != nil {
		s := acts.Status(*req.Params.Status)
		f.Status = &s
	}
	list, total, err := h.actStore().List(ctx, f, pg)
	if err != nil {
		return nil, err
	}
	out := apiserver.ListActs200JSONResponse{Data: make([]models.ActSummary, 0, len(list)), Meta: pg.Meta(total)}
	for i := range list {
		out.Data = append(out.Data, acts.APISummary(&list[i]))
	}
	return out, nil
}

func (h *Handlers) CreateAct(ctx context.Context, req apiserver.CreateActRequestObject) (apiserver.CreateActResponseObject, error) {
	p, err := auth.Require(ctx, auth.ScopeActsWrite, auth.Write)
	if err != nil {
		return nil, err
	}
	d, err := h.actStore().Create(ctx, p, req.Body.ClientId, req.Body.TemplateId, req.Body.Title)
	if err != nil {
		return nil, err
	}
	a, err := d.API()
	return apiserver.CreateAct201JSONResponse(a), err
}

func (h *Handlers) GetAct(ctx context.Context, req apiserver.GetActRequestObject) (apiserver.GetActResponseObject, error) {
	if _, err := auth.Require(ctx, auth.ScopeActsRead, auth.Read); err != nil {
		return nil, err
	}
	d, err := h.actStore().Get(ctx, req.ActUuid)
	if err != nil {
		return nil, err
	}
	a, err := d.API()
	return apiserver.GetAct200JSONResponse(a), err
}

func (h *Handlers) UpdateAct(ctx context.Context, req apiserver.UpdateActRequestObject) (apiserver.UpdateActResponseObject, error) {
	p, err := auth.Require(ctx, auth.ScopeActsWrite, auth.Write)
	if err != nil {
		return nil, err
	}
	d, err := h.actStore().Update(ctx, p, req.ActUuid, req.Body.Title)
	if err != nil {
		return nil, err
	}
	a, err := d.API()
	return apiserver.UpdateAct200JSONResponse(a), err
}

func (h *Handlers) DeleteAct(ctx context.Context, req apiserver.DeleteActRequestObject) (apiserver.DeleteActResponseObject, error) {
	if _, err := auth.Require(ctx, auth.ScopeActsWrite, auth.Write); err != nil {
		return nil, err
	}
	if err := h.actStore().Delete(ctx, req.ActUuid); err != nil {
		return nil, err
	}
	return apiserver.DeleteAct204Response{}, nil
}

func (h *Handlers) FinalizeAct(ctx context.Context, req apiserver.FinalizeActRequestObject) (apiserver.FinalizeActResponseObject, error) {
	p, err := auth.Require(ctx, auth.ScopeActsWrite, auth.Write)
	if err != nil {
		return nil, err
	}
	d, err := h.actStore().Finalize(ctx, p, req.ActUuid)
	if err != nil {
		return nil, err
	}
	a, err := d.API()
	return apiserver.FinalizeAct200JSONResponse(a), err
}

func (h *Handlers) DuplicateAct(ctx context.Context, req apiserver.DuplicateActRequestObject) (apiserver.DuplicateActResponseObject, error) {
	p, err := auth.Require(ctx, auth.ScopeActsWrite, auth.Write)
	if err != nil {
		return nil, err
	}
	d, err := h.actStore().Duplicate(ctx, p, req.ActUuid)
	if err != nil {
		return nil, err
	}
	a, err := d.API()
	return apiserver.DuplicateAct201JSONResponse(a), err
}

func (h *Handlers) ListActHistory(ctx context.Context, req apiserver.ListActHistoryRequestObject) (apiserver.ListActHistoryResponseObject, error) {
	if _, err := auth.Require(ctx, auth.ScopeActsRead, auth.Read); err != nil {
		return nil, err
	}
	pg, err := page.New(req.Params.Page, req.Params.Limit)
	if err != nil {
		return nil, err
	}
	list, total, err := h.actStore().History(ctx, req.ActUuid, pg)
	if err != nil {
		return nil, err
	}
	out := apiserver.ListActHistory200JSONResponse{Data: make([]models.HistoryEntry, 0, len(list)), Meta: pg.Meta(total)}
	for i := range list {
		out.Data = append(out.Data, acts.APIHistory(&list[i]))
	}
	return out, nil
}

func (h *Handlers) GetLatestClientAct(ctx context.Context, req apiserver.GetLatestClientActRequestObject) (apiserver.GetLatestClientActResponseObject, error) {
	if _, err := auth.Require(ctx, auth.ScopeActsRead, auth.Read); err != nil {
		return nil, err
	}
	d, err := h.actStore().LatestForClient(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	a, err := d.API()
	return apiserver.GetLatestClientAct200JSONResponse(a), err
}
