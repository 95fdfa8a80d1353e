package httpapi

import (
	"context"

	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/pkg/page"
)

// ListUsers is GET /users: admins with the users:read scope (authorize.go).
func (h *Handlers) ListUsers(ctx context.Context, req apiserver.ListUsersRequestObject) (apiserver.ListUsersResponseObject, error) {
	pr, err := page.New(req.Params.Page, req.Params.Limit)
	if err != nil {
		return nil, err
	}
	list, total, err := h.svc.Users.List(ctx, pr)
	if err != nil {
		return nil, err
	}
	out := apiserver.ListUsers200JSONResponse{Data: make([]models.User, len(list)), Meta: pageMeta(pr, total)}
	for i, u := range list {
		out.Data[i] = models.User{
			Id: u.ID, Email: openapi_types.Email(u.Email), Name: u.Name,
			Role: models.Role(u.Role), CreatedAt: u.CreatedAt.UTC(),
		}
	}
	return out, nil
}
