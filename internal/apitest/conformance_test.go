package apitest

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/finsvc/finsvc/internal/httpapi"
)

func TestValidateEvent(t *testing.T) {
	valid := `{"id":"7b0c4a1e-3d5f-4b8a-9c2d-1e2f3a4b5c6d","event":"act.fetch_data","occurred_at":"2026-01-05T09:30:00Z",
	  "data":{"request_id":"3f0c1d9e-8a53-4c1e-9a43-0d2b7f7c2a11","requested_at":"2026-01-05T09:30:00Z","expires_at":"2026-01-05T10:00:00Z",
	    "act":{"uuid":"7b0c4a1e-3d5f-4b8a-9c2d-1e2f3a4b5c6d","client_id":1,"template_id":1,"title":"Review"},
	    "fields":[{"id":12,"template_field_id":3,"template_field_key":"equity_ratio","template_field_name":"Equity ratio","type":"percentage","external_data_field":true,"source":"external_data","options":null}]}}`
	if err := ValidateEvent([]byte(valid)); err != nil {
		t.Fatalf("valid event refused: %v", err)
	}
	for name, body := range map[string]string{
		"missing request_id": strings.Replace(valid, `"request_id":"3f0c1d9e-8a53-4c1e-9a43-0d2b7f7c2a11",`, "", 1),
		"bad uuid":           strings.Replace(valid, `"request_id":"3f0c1d9e-8a53-4c1e-9a43-0d2b7f7c2a11"`, `"request_id":"nope"`, 1),
		"bad field type":     strings.Replace(valid, `"type":"percentage"`, `"type":"money"`, 1),
		"unknown kind":       strings.Replace(valid, `"event":"act.fetch_data"`, `"event":"act.deleted"`, 1),
		"not json":           `{"id":`,
	} {
		if err := ValidateEvent([]byte(body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A header the middleware adds must be declared on the response that
// carries it.
func TestUndeclaredMiddlewareHeader(t *testing.T) {
	req := httptest.NewRequest("GET", "/api/1.0/clients", nil)
	body := []byte(`{"data":[],"meta":{"current_page":1,"per_page":25,"total":0}}`)
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}, "Request_id": {"abc"}}}
	if err := ValidateResponse(req, resp, body); err != nil {
		t.Fatalf("declared header refused: %v", err)
	}
	resp.Header.Set("Retry-After", "1")
	if err := ValidateResponse(req, resp, body); err == nil || !strings.Contains(err.Error(), "Retry-After") {
		t.Fatalf("undeclared Retry-After accepted: %v", err)
	}
}

// The second validator on its own: it accepts what the document allows and
// refuses what it does not, for responses and for webhook payloads, so that
// a pass through both validators means two implementations agreed.
func TestSecondValidator(t *testing.T) {
	req := httptest.NewRequest("GET", "/api/1.0/clients", nil)
	ok := []byte(`{"data":[{"id":1,"company_name":"Nordic Timber AS","org_number":"923456781","country":"NO","credit_limit":250000.00,
	  "created_at":"2026-01-05T09:30:00Z","updated_at":"2026-01-05T09:30:00Z"}],"meta":{"current_page":1,"per_page":25,"total":1}}`)
	resp := func() *http.Response {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}}
	}
	if err := validateResponseSecond(req, resp(), ok); err != nil {
		t.Fatalf("a valid page refused: %v", err)
	}
	for name, body := range map[string]string{
		"id as a string":        strings.Replace(string(ok), `"id":1`, `"id":"1"`, 1),
		"country too long":      strings.Replace(string(ok), `"country":"NO"`, `"country":"NOR"`, 1),
		"missing total":         strings.Replace(string(ok), `,"total":1`, ``, 1),
		"credit_limit negative": strings.Replace(string(ok), `250000.00`, `-1`, 1),
	} {
		if err := validateResponseSecond(req, resp(), []byte(body)); err == nil {
			t.Errorf("%s: accepted by libopenapi-validator", name)
		}
	}

	event := []byte(`{"id":"0b7e2c4a-6d1f-4e8a-9b3c-5d7f9a1b3c5e","event":"webhook.test","occurred_at":"2026-03-02T09:15:00Z",
	  "data":{"webhook_id":1,"message":"A test event from finsvc."}}`)
	if err := validateEventSecond("WebhookTestEvent", event); err != nil {
		t.Fatalf("a valid event refused: %v", err)
	}
	bad := strings.Replace(string(event), `"webhook_id":1`, `"webhook_id":"one"`, 1)
	if err := validateEventSecond("WebhookTestEvent", []byte(bad)); err == nil {
		t.Fatal("a bad event accepted by libopenapi-validator")
	}
}

// The harness knows an event's schema from the spec's callbacks alone: a
// callback added to the spec (here, in memory) is validated with its
// schema without an edit here.
func TestEventSchemaComesFromTheSpec(t *testing.T) {
	spec, err := httpapi.Spec()
	if err != nil {
		t.Fatal(err)
	}
	if name, ok := eventSchema(spec, "act.created"); !ok || name != "ActCreatedEvent" {
		t.Fatalf("act.created: %q %v", name, ok)
	}
	if _, ok := eventSchema(spec, "invoice.created"); ok {
		t.Fatal("invoice.created known before the spec describes it")
	}
	cbs := spec.Paths.Value("/api/1.0/webhooks").Post.Callbacks
	created := cbs["actCreated"].Value.Value("{$request.body#/target}").Post
	body := *created.RequestBody.Value
	mt := *body.Content.Get("application/json")
	envelope := *spec.Components.Schemas["ActCreatedEvent"].Value
	envelope.Properties = maps.Clone(envelope.Properties)
	envelope.Properties["event"] = &openapi3.SchemaRef{Value: &openapi3.Schema{Type: &openapi3.Types{"string"}, Enum: []any{"invoice.created"}}}
	spec.Components.Schemas["InvoiceCreatedEvent"] = &openapi3.SchemaRef{Value: &envelope}
	mt.Schema = &openapi3.SchemaRef{Ref: "#/components/schemas/InvoiceCreatedEvent", Value: &envelope}
	body.Content = openapi3.Content{"application/json": &mt}
	op := *created
	op.RequestBody = &openapi3.RequestBodyRef{Value: &body}
	cb := openapi3.NewCallback(openapi3.WithCallback("{$request.body#/target}", &openapi3.PathItem{Post: &op}))
	cbs["invoiceCreated"] = &openapi3.CallbackRef{Value: cb}
	if name, ok := eventSchema(spec, "invoice.created"); !ok || name != "InvoiceCreatedEvent" {
		t.Fatalf("invoice.created after the spec describes it: %q %v", name, ok)
	}
}

// On an operation whose handler sets its own headers, every header beyond
// the transport's must be declared, not only the middleware's.
func TestFullyDeclaredOperation(t *testing.T) {
	req := httptest.NewRequest("GET", "/openapi.yaml", nil)
	resp := &http.Response{StatusCode: 200, Header: http.Header{
		"Content-Type": {"application/yaml"}, "Cache-Control": {"public, max-age=300"}, "Request_id": {"abc"},
	}}
	body := []byte("openapi: 3.0.3\n")
	if err := ValidateResponse(req, resp, body); err != nil {
		t.Fatalf("declared headers refused: %v", err)
	}
	resp.Header.Set("X-Frame-Options", "DENY")
	if err := ValidateResponse(req, resp, body); err == nil || !strings.Contains(err.Error(), "X-Frame-Options") {
		t.Fatalf("undeclared X-Frame-Options accepted: %v", err)
	}
}
