// Code in this file answers 501 for operations whose capability has not
// landed yet. A real implementation is a method of the same name on *Handlers
// in the capability's own file; Go's method promotion lets it shadow the one
// here. Delete a stub when its operation is implemented.

package httpapi

import (
	"context"

	"github.com/finsvc/finsvc/gen/api"
	"github.com/finsvc/finsvc/pkg/apperr"
)

// unimplemented answers every operation with 501 in the error format.
type unimplemented struct{}

func notImplemented(op string) error {
	return apperr.Ef(apperr.NotImplemented, "%s is not implemented yet", op)
}

func (unimplemented) ListActs(context.Context, api.ListActsRequestObject) (api.ListActsResponseObject, error) {
	return nil, notImplemented("ListActs")
}

func (unimplemented) CreateAct(context.Context, api.CreateActRequestObject) (api.CreateActResponseObject, error) {
	return nil, notImplemented("CreateAct")
}

func (unimplemented) DeleteAct(context.Context, api.DeleteActRequestObject) (api.DeleteActResponseObject, error) {
	return nil, notImplemented("DeleteAct")
}

func (unimplemented) GetAct(context.Context, api.GetActRequestObject) (api.GetActResponseObject, error) {
	return nil, notImplemented("GetAct")
}

func (unimplemented) UpdateAct(context.Context, api.UpdateActRequestObject) (api.UpdateActResponseObject, error) {
	return nil, notImplemented("UpdateAct")
}

func (unimplemented) PutActData(context.Context, api.PutActDataRequestObject) (api.PutActDataResponseObject, error) {
	return nil, notImplemented("PutActData")
}

func (unimplemented) PutActDataPoint(context.Context, api.PutActDataPointRequestObject) (api.PutActDataPointResponseObject, error) {
	return nil, notImplemented("PutActDataPoint")
}

func (unimplemented) DuplicateAct(context.Context, api.DuplicateActRequestObject) (api.DuplicateActResponseObject, error) {
	return nil, notImplemented("DuplicateAct")
}

func (unimplemented) CreateFetchRequest(context.Context, api.CreateFetchRequestRequestObject) (api.CreateFetchRequestResponseObject, error) {
	return nil, notImplemented("CreateFetchRequest")
}

func (unimplemented) GetFetchRequest(context.Context, api.GetFetchRequestRequestObject) (api.GetFetchRequestResponseObject, error) {
	return nil, notImplemented("GetFetchRequest")
}

func (unimplemented) FinalizeAct(context.Context, api.FinalizeActRequestObject) (api.FinalizeActResponseObject, error) {
	return nil, notImplemented("FinalizeAct")
}

func (unimplemented) ListActHistory(context.Context, api.ListActHistoryRequestObject) (api.ListActHistoryResponseObject, error) {
	return nil, notImplemented("ListActHistory")
}

func (unimplemented) ListClients(context.Context, api.ListClientsRequestObject) (api.ListClientsResponseObject, error) {
	return nil, notImplemented("ListClients")
}

func (unimplemented) CreateClient(context.Context, api.CreateClientRequestObject) (api.CreateClientResponseObject, error) {
	return nil, notImplemented("CreateClient")
}

func (unimplemented) DeleteClient(context.Context, api.DeleteClientRequestObject) (api.DeleteClientResponseObject, error) {
	return nil, notImplemented("DeleteClient")
}

func (unimplemented) GetClient(context.Context, api.GetClientRequestObject) (api.GetClientResponseObject, error) {
	return nil, notImplemented("GetClient")
}

func (unimplemented) UpdateClient(context.Context, api.UpdateClientRequestObject) (api.UpdateClientResponseObject, error) {
	return nil, notImplemented("UpdateClient")
}

func (unimplemented) GetLatestClientAct(context.Context, api.GetLatestClientActRequestObject) (api.GetLatestClientActResponseObject, error) {
	return nil, notImplemented("GetLatestClientAct")
}

func (unimplemented) GetMe(context.Context, api.GetMeRequestObject) (api.GetMeResponseObject, error) {
	return nil, notImplemented("GetMe")
}

func (unimplemented) ListTemplates(context.Context, api.ListTemplatesRequestObject) (api.ListTemplatesResponseObject, error) {
	return nil, notImplemented("ListTemplates")
}

func (unimplemented) CreateTemplate(context.Context, api.CreateTemplateRequestObject) (api.CreateTemplateResponseObject, error) {
	return nil, notImplemented("CreateTemplate")
}

func (unimplemented) GetTemplate(context.Context, api.GetTemplateRequestObject) (api.GetTemplateResponseObject, error) {
	return nil, notImplemented("GetTemplate")
}

func (unimplemented) UpdateTemplate(context.Context, api.UpdateTemplateRequestObject) (api.UpdateTemplateResponseObject, error) {
	return nil, notImplemented("UpdateTemplate")
}

func (unimplemented) ListUsers(context.Context, api.ListUsersRequestObject) (api.ListUsersResponseObject, error) {
	return nil, notImplemented("ListUsers")
}

func (unimplemented) ListWebhooks(context.Context, api.ListWebhooksRequestObject) (api.ListWebhooksResponseObject, error) {
	return nil, notImplemented("ListWebhooks")
}

func (unimplemented) CreateWebhook(context.Context, api.CreateWebhookRequestObject) (api.CreateWebhookResponseObject, error) {
	return nil, notImplemented("CreateWebhook")
}

func (unimplemented) DeleteWebhook(context.Context, api.DeleteWebhookRequestObject) (api.DeleteWebhookResponseObject, error) {
	return nil, notImplemented("DeleteWebhook")
}

func (unimplemented) GetWebhook(context.Context, api.GetWebhookRequestObject) (api.GetWebhookResponseObject, error) {
	return nil, notImplemented("GetWebhook")
}

func (unimplemented) UpdateWebhook(context.Context, api.UpdateWebhookRequestObject) (api.UpdateWebhookResponseObject, error) {
	return nil, notImplemented("UpdateWebhook")
}

func (unimplemented) ListWebhookDeliveries(context.Context, api.ListWebhookDeliveriesRequestObject) (api.ListWebhookDeliveriesResponseObject, error) {
	return nil, notImplemented("ListWebhookDeliveries")
}

func (unimplemented) RedeliverWebhookDelivery(context.Context, api.RedeliverWebhookDeliveryRequestObject) (api.RedeliverWebhookDeliveryResponseObject, error) {
	return nil, notImplemented("RedeliverWebhookDelivery")
}

func (unimplemented) RotateWebhookSecret(context.Context, api.RotateWebhookSecretRequestObject) (api.RotateWebhookSecretResponseObject, error) {
	return nil, notImplemented("RotateWebhookSecret")
}
