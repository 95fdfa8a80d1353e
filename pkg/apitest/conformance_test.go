package apitest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
