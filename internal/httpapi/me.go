package httpapi

import (
	"context"

	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/tenant"
)

// GetMe returns the user the bearer token was issued for. It needs no
// scope: any valid access token may ask who it belongs to. A token whose
// user was deleted meanwhile is no longer valid (401).
func (h *Handlers) GetMe(ctx context.Context, _ apiserver.GetMeRequestObject) (apiserver.GetMeResponseObject, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return nil, apperr.E(apperr.Unauthenticated, "authentication required")
	}
	u, err := h.svc.Users.Get(ctx, p.UserID)
	if apperr.Is(err, apperr.NotFound) {
		return nil, apperr.E(apperr.Unauthenticated, "the access token's user no longer exists")
	}
	if err != nil {
		return nil, err
	}
	return apiserver.GetMe200JSONResponse(models.Me{
		Id:           u.ID,
		Email:        openapi_types.Email(u.Email),
		Name:         u.Name,
		Role:         models.Role(u.Role),
		Organization: tenant.MustFromContext(ctx).Slug,
	}), nil
}
