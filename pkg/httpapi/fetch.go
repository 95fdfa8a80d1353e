package httpapi

import (
	"context"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/pkg/auth"
)

// Fetch requests (DESIGN section 4, "Fetch requests"). Creating one needs
// acts:write and a member or admin role; reading one needs acts:read.

func (h *Handlers) CreateFetchRequest(ctx context.Context, req apiserver.CreateFetchRequestRequestObject) (apiserver.CreateFetchRequestResponseObject, error) {
	p, err := auth.Require(ctx, auth.ScopeActsWrite, auth.Write)
	if err != nil {
		return nil, err
	}
	v, err := h.actStore().CreateRequest(ctx, p, req.ActUuid, req.Body.DataPointIds)
	if err != nil {
		return nil, err
	}
	return apiserver.CreateFetchRequest201JSONResponse(v.API()), nil
}

func (h *Handlers) GetFetchRequest(ctx context.Context, req apiserver.GetFetchRequestRequestObject) (apiserver.GetFetchRequestResponseObject, error) {
	if _, err := auth.Require(ctx, auth.ScopeActsRead, auth.Read); err != nil {
		return nil, err
	}
	v, err := h.actStore().GetRequest(ctx, req.ActUuid, req.FetchRequestId)
	if err != nil {
		return nil, err
	}
	return apiserver.GetFetchRequest200JSONResponse(v.API()), nil
}
