package httpapi

import (
	"context"

	"github.com/google/uuid"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/pkg/acts"
)

// The act data PUTs: correlated results of a fetch request, or ordinary
// edits without fetch_request_id (spec sections 3 and 4; the rules and their
// order are documented on acts.Store.Apply). The request validator has
// already turned schema-level value problems on these routes (an error
// over 1,000 characters) into 422s.

func (h *Handlers) PutActDataPoint(ctx context.Context, req apiserver.PutActDataPointRequestObject) (apiserver.PutActDataPointResponseObject, error) {
	b := req.Body
	w := acts.Write{DataID: &req.DataId, Items: []acts.Item{{Value: b.Value, Error: b.Error}}}
	if b.FetchRequestId != nil {
		s := b.FetchRequestId.String()
		w.FetchRequestID = &s
	}
	res, err := h.actStore().Apply(ctx, req.ActUuid.String(), w)
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
	b := req.Body
	w := acts.Write{Items: make([]acts.Item, len(b.Data))}
	for i, it := range b.Data {
		w.Items[i] = acts.Item{ID: it.Id, TemplateFieldID: it.TemplateFieldId, TemplateFieldKey: it.TemplateFieldKey,
			Value: it.Value, Error: it.Error}
	}
	if b.FetchRequestId != nil {
		s := b.FetchRequestId.String()
		w.FetchRequestID = &s
	}
	res, err := h.actStore().Apply(ctx, req.ActUuid.String(), w)
	if err != nil {
		return nil, err
	}
	out := apiserver.PutActData200JSONResponse{Data: make([]models.DataPoint, len(res.Data))}
	if res.FetchRequestID != nil {
		id := uuid.MustParse(*res.FetchRequestID)
		out.FetchRequestId = &id
	}
	for i := range res.Data {
		d, err := acts.APIDataPoint(&res.Data[i], res.Fetch[res.Data[i].ID])
		if err != nil {
			return nil, err
		}
		out.Data[i] = d
	}
	return out, nil
}
