package httpapi

import (
	"context"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/pkg/auth"
	"github.com/finsvc/finsvc/pkg/clients"
	"github.com/finsvc/finsvc/pkg/page"
)

// Clients: GET /clients (spec), GET /clients/{id} (spec), and our POST,
// PATCH and DELETE (DESIGN section 4). Viewers read; members and admins
// write; tokens need clients:read or clients:write.

func (h *Handlers) clientStore() *clients.Store { return clients.NewStore(h.deps.DB) }

// ListClients is GET /clients: one COUNT plus one page query.
func (h *Handlers) ListClients(ctx context.Context, req apiserver.ListClientsRequestObject) (apiserver.ListClientsResponseObject, error) {
	if _, err := auth.Require(ctx, auth.ScopeClientsRead, auth.Read); err != nil {
		return nil, err
	}
	p, err := page.New(req.Params.Page, req.Params.Limit)
	if err != nil {
		return nil, err
	}
	list, total, err := h.clientStore().List(ctx, p)
	if err != nil {
		return nil, err
	}
	out := apiserver.ListClients200JSONResponse{Data: make([]models.Client, len(list)), Meta: p.Meta(total)}
	for i := range list {
		out.Data[i] = clientJSON(&list[i])
	}
	return out, nil
}

// GetClient is GET /clients/{id}.
func (h *Handlers) GetClient(ctx context.Context, req apiserver.GetClientRequestObject) (apiserver.GetClientResponseObject, error) {
	if _, err := auth.Require(ctx, auth.ScopeClientsRead, auth.Read); err != nil {
		return nil, err
	}
	c, err := h.clientStore().Get(ctx, nil, req.Id)
	if err != nil {
		return nil, err
	}
	return apiserver.GetClient200JSONResponse(clientJSON(c)), nil
}

// CreateClient is POST /clients.
func (h *Handlers) CreateClient(ctx context.Context, req apiserver.CreateClientRequestObject) (apiserver.CreateClientResponseObject, error) {
	if _, err := auth.Require(ctx, auth.ScopeClientsWrite, auth.Write); err != nil {
		return nil, err
	}
	b := req.Body
	c, err := h.clientStore().Create(ctx, clients.Input{
		CompanyName: b.CompanyName, OrgNumber: b.OrgNumber, Country: b.Country, CreditLimit: b.CreditLimit,
	})
	if err != nil {
		return nil, err
	}
	return apiserver.CreateClient201JSONResponse(clientJSON(c)), nil
}

// UpdateClient is PATCH /clients/{id}: only the fields sent change.
func (h *Handlers) UpdateClient(ctx context.Context, req apiserver.UpdateClientRequestObject) (apiserver.UpdateClientResponseObject, error) {
	if _, err := auth.Require(ctx, auth.ScopeClientsWrite, auth.Write); err != nil {
		return nil, err
	}
	b := req.Body
	c, err := h.clientStore().Update(ctx, req.Id, clients.Patch{
		CompanyName: b.CompanyName, OrgNumber: b.OrgNumber, Country: b.Country, CreditLimit: b.CreditLimit,
	})
	if err != nil {
		return nil, err
	}
	return apiserver.UpdateClient200JSONResponse(clientJSON(c)), nil
}

// DeleteClient is DELETE /clients/{id}; refused with 400 while the client
// has acts.
func (h *Handlers) DeleteClient(ctx context.Context, req apiserver.DeleteClientRequestObject) (apiserver.DeleteClientResponseObject, error) {
	if _, err := auth.Require(ctx, auth.ScopeClientsWrite, auth.Write); err != nil {
		return nil, err
	}
	if err := h.clientStore().Delete(ctx, req.Id); err != nil {
		return nil, err
	}
	return apiserver.DeleteClient204Response{}, nil
}

func clientJSON(c *clients.Client) models.Client {
	return models.Client{
		Id: c.ID, CompanyName: c.CompanyName, OrgNumber: c.OrgNumber, Country: c.Country,
		CreditLimit: c.CreditLimit, CreatedAt: c.CreatedAt.UTC(), UpdatedAt: c.UpdatedAt.UTC(),
	}
}
