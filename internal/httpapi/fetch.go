package httpapi

import (
	"context"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/internal/auth"
)

// Fetch requests. Creating one needs acts:write and a member or admin role;
// reading one needs acts:read (both enforced by authorize.go).

func (h *Handlers) CreateFetchRequest(ctx context.Context, req apiserver.CreateFetchRequestRequestObject) (apiserver.CreateFetchRequestResponseObject, error) {
	p := auth.MustFromContext(ctx)
	v, err := h.svc.Acts.CreateRequest(ctx, p, req.ActUuid, req.Body.DataPointIds)
	if err != nil {
		return nil, err
	}
	return apiserver.CreateFetchRequest201JSONResponse(v.API()), nil
}

func (h *Handlers) GetFetchRequest(ctx context.Context, req apiserver.GetFetchRequestRequestObject) (apiserver.GetFetchRequestResponseObject, error) {
	v, err := h.svc.Acts.GetRequest(ctx, req.ActUuid, req.FetchRequestId)
	if err != nil {
		return nil, err
	}
	return apiserver.GetFetchRequest200JSONResponse(v.API()), nil
}
