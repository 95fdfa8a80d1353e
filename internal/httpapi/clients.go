package httpapi

import (
	"context"
	"time"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/page"
)

// Clients: list, get, create, change, delete. Viewers read; members and
// admins write; tokens need clients:read or clients:write (authorize.go).

// ListClients is GET /clients, filtered by org_number, country and q, or
// the changes since updated_since.
func (h *Handlers) ListClients(ctx context.Context, req apiserver.ListClientsRequestObject) (apiserver.ListClientsResponseObject, error) {
	p, err := page.New(req.Params.Page, req.Params.Limit)
	if err != nil {
		return nil, err
	}
	list, total, err := h.svc.Clients.List(ctx, clients.Filter{
		OrgNumber: req.Params.OrgNumber, Country: req.Params.Country, NamePrefix: req.Params.Q,
		UpdatedSince: req.Params.UpdatedSince,
	}, p)
	if err != nil {
		return nil, err
	}
	out := apiserver.ListClients200JSONResponse{Data: make([]models.Client, len(list)), Meta: pageMeta(p, total)}
	for i := range list {
		out.Data[i] = clientJSON(&list[i])
	}
	if since := req.Params.UpdatedSince; since != nil {
		var last *time.Time
		if n := len(list); n > 0 {
			last = &list[n-1].UpdatedAt
		}
		out.Meta.NextUpdatedSince = nextSince(since, last)
	}
	return out, nil
}

// GetClient is GET /clients/{id}.
func (h *Handlers) GetClient(ctx context.Context, req apiserver.GetClientRequestObject) (apiserver.GetClientResponseObject, error) {
	c, err := h.svc.Clients.Get(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	return clientBody(clientJSON(c)), nil
}

// CreateClient is POST /clients.
func (h *Handlers) CreateClient(ctx context.Context, req apiserver.CreateClientRequestObject) (apiserver.CreateClientResponseObject, error) {
	b := req.Body
	c, err := h.svc.Clients.Create(ctx, clients.Input{
		CompanyName: b.CompanyName, OrgNumber: b.OrgNumber, Country: b.Country, CreditLimit: b.CreditLimit,
	})
	if err != nil {
		return nil, err
	}
	return apiserver.CreateClient201JSONResponse(clientJSON(c)), nil
}

// UpdateClient is PATCH /clients/{id}: only the fields sent change.
func (h *Handlers) UpdateClient(ctx context.Context, req apiserver.UpdateClientRequestObject) (apiserver.UpdateClientResponseObject, error) {
	b := req.Body
	c, err := h.svc.Clients.Update(ctx, req.Id, clients.Patch{
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
	if err := h.svc.Clients.Delete(ctx, req.Id); err != nil {
		return nil, err
	}
	return apiserver.DeleteClient204Response{}, nil
}

func clientJSON(c *clients.Client) models.Client { return c.API() }
