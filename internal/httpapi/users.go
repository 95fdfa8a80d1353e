package httpapi

import (
	"context"

	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/users"
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
	for i := range list {
		out.Data[i] = userJSON(&list[i])
	}
	return out, nil
}

// CreateUser is POST /users.
func (h *Handlers) CreateUser(ctx context.Context, req apiserver.CreateUserRequestObject) (apiserver.CreateUserResponseObject, error) {
	b := req.Body
	u, generated, err := h.svc.Users.CreateWithPassword(ctx, b.Email, deref(b.Name), string(b.Role), deref(b.Password))
	if err != nil {
		return nil, err
	}
	out := apiserver.CreateUser201JSONResponse{User: userJSON(u)}
	if generated != "" {
		out.OneTimePassword = &generated
		if u.PasswordExpiresAt != nil {
			at := u.PasswordExpiresAt.UTC()
			out.ExpiresAt = &at
		}
	}
	return out, nil
}

// GetUser is GET /users/{user_id}.
func (h *Handlers) GetUser(ctx context.Context, req apiserver.GetUserRequestObject) (apiserver.GetUserResponseObject, error) {
	u, err := h.svc.Users.Get(ctx, req.UserId)
	if err != nil {
		return nil, err
	}
	return apiserver.GetUser200JSONResponse(userJSON(u)), nil
}

// UpdateUser is PATCH /users/{user_id}.
func (h *Handlers) UpdateUser(ctx context.Context, req apiserver.UpdateUserRequestObject) (apiserver.UpdateUserResponseObject, error) {
	var role *string
	if req.Body.Role != nil {
		r := string(*req.Body.Role)
		role = &r
	}
	u, err := h.svc.Users.Update(ctx, req.UserId, req.Body.Name, role)
	if err != nil {
		return nil, err
	}
	return apiserver.UpdateUser200JSONResponse(userJSON(u)), nil
}

// DeleteUser is DELETE /users/{user_id}: it deactivates the user.
func (h *Handlers) DeleteUser(ctx context.Context, req apiserver.DeleteUserRequestObject) (apiserver.DeleteUserResponseObject, error) {
	if err := h.svc.Users.Deactivate(ctx, req.UserId); err != nil {
		return nil, err
	}
	return apiserver.DeleteUser204Response{}, nil
}

// IssueOneTimePassword is POST /users/{user_id}/one-time-password.
func (h *Handlers) IssueOneTimePassword(ctx context.Context, req apiserver.IssueOneTimePasswordRequestObject) (apiserver.IssueOneTimePasswordResponseObject, error) {
	pw, expires, err := h.svc.Users.IssueOneTimePassword(ctx, req.UserId)
	if err != nil {
		return nil, err
	}
	return apiserver.IssueOneTimePassword200JSONResponse{OneTimePassword: pw, ExpiresAt: expires.UTC()}, nil
}

func userJSON(u *users.User) models.User {
	out := models.User{
		Id: u.ID, Email: openapi_types.Email(u.Email), Name: u.Name,
		Role: models.Role(u.Role), Active: u.Active(), CreatedAt: u.CreatedAt.UTC(),
	}
	if u.DeactivatedAt != nil {
		t := u.DeactivatedAt.UTC()
		out.DeactivatedAt = &t
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
