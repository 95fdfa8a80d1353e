package httpapi

import (
	"context"

	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/pkg/apperr"
	"github.com/finsvc/finsvc/pkg/auth"
	"github.com/finsvc/finsvc/pkg/page"
	"github.com/finsvc/finsvc/pkg/users"
)

// ListUsers is GET /users: admins only (DESIGN section 3). The operation
// declares no scope, so only the role is checked.
func (h *Handlers) ListUsers(ctx context.Context, req apiserver.ListUsersRequestObject) (apiserver.ListUsersResponseObject, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return nil, apperr.E(apperr.Unauthenticated, "authentication required")
	}
	if p.Role != auth.RoleAdmin {
		return nil, apperr.Ef(apperr.Forbidden, "role %s may not list users", p.Role)
	}
	pr, err := page.New(req.Params.Page, req.Params.Limit)
	if err != nil {
		return nil, err
	}
	list, total, err := users.NewStore(h.deps.DB).List(ctx, pr)
	if err != nil {
		return nil, err
	}
	out := apiserver.ListUsers200JSONResponse{Data: make([]models.User, len(list)), Meta: pr.Meta(total)}
	for i, u := range list {
		out.Data[i] = models.User{
			Id: u.ID, Email: openapi_types.Email(u.Email), Name: u.Name,
			Role: models.Role(u.Role), CreatedAt: u.CreatedAt.UTC(),
		}
	}
	return out, nil
}
