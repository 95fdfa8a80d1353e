package httpapi

import (
	"context"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/acts"
	"github.com/finsvc/finsvc/internal/auth"
)

// The act data PUTs: correlated results of a fetch request, or ordinary
// edits without fetch_request_id (ARCHITECTURE.md, The act aggregate and the fetch flow; the rules and their
// order are documented on acts.Store.WriteData). The request validator has
// already turned schema-level value problems on these routes (an error
// over 1,000 characters) into 422s.

func (h *Handlers) PutActDataPoint(ctx context.Context, req apiserver.PutActDataPointRequestObject) (apiserver.PutActDataPointResponseObject, error) {
	p := auth.MustFromContext(ctx)
	b := req.Body
	w := acts.DataWrite{FetchRequestID: b.FetchRequestId, DataID: &req.DataId, Items: []acts.DataItem{{Value: b.Value, Error: b.Error}}}
	res, err := h.svc.Acts.WriteData(ctx, p, req.ActUuid, w)
	if err != nil {
		return nil, err
	}
	d, err := acts.APIDataPoint(&res.Data[0], res.Fetch[res.Data[0].ID])
	if err != nil {
		return nil, err
	}
	return apiserver.PutActDataPoint200JSONResponse(d), nil
}

func (h *Handlers) PutActData(ctx context.Context, req apiserver.PutActDataRequestObject) (apiserver.PutActDataResponseObject, error) {
	p := auth.MustFromContext(ctx)
	b := req.Body
	w := acts.DataWrite{FetchRequestID: b.FetchRequestId, Items: make([]acts.DataItem, len(b.Data))}
	for i, it := range b.Data {
		w.Items[i] = acts.DataItem{ID: it.Id, TemplateFieldID: it.TemplateFieldId, TemplateFieldKey: it.TemplateFieldKey,
			Value: it.Value, Error: it.Error}
	}
	res, err := h.svc.Acts.WriteData(ctx, p, req.ActUuid, w)
	if err != nil {
		return nil, err
	}
	out := apiserver.PutActData200JSONResponse{FetchRequestId: res.FetchRequestID, Data: make([]models.DataPoint, len(res.Data))}
	for i := range res.Data {
		d, err := acts.APIDataPoint(&res.Data[i], res.Fetch[res.Data[i].ID])
		if err != nil {
			return nil, err
		}
		out.Data[i] = d
	}
	return out, nil
}
