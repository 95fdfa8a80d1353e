package apitest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/finsvc/finsvc/internal/httpapi"
	"github.com/finsvc/finsvc/internal/web"
	"github.com/finsvc/finsvc/openapi"
)

var (
	routerOnce sync.Once
	router     routers.Router
	routerErr  error
)

func specRouter() (routers.Router, error) {
	routerOnce.Do(func() {
		var spec *openapi3.T
		spec, routerErr = httpapi.Spec()
		if routerErr != nil {
			return
		}
		router, routerErr = gorillamux.NewRouter(spec)
		// Bodies that are not JSON are checked for their declared content
		// type and taken as strings.
		for _, ct := range []string{"text/html", "application/yaml", "application/x-ndjson"} {
			openapi3filter.RegisterBodyDecoder(ct, func(r io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
				b, err := io.ReadAll(r)
				return string(b), err
			})
		}
	})
	return router, routerErr
}

// Unspecified lists path prefixes that are server-rendered pages, not part of
// the API contract; their responses are not validated.
var Unspecified = []string{"/login", "/logout", "/developer/", "/account/", "/console/", "/assets/"}

// ValidateResponse checks resp (whose body is given) against the operation
// the request matches in the OpenAPI document: status, headers, content type
// and body schema. A request to a path the document does not know is itself
// a failure, unless it is a page (Unspecified).
func ValidateResponse(req *http.Request, resp *http.Response, body []byte) error {
	for _, p := range Unspecified {
		if strings.HasPrefix(req.URL.Path, p) {
			return nil
		}
	}
	if req.URL.Path == "/" && resp.StatusCode == http.StatusFound {
		return nil // the tenant root sends a browser to the console
	}
	r, err := specRouter()
	if err != nil {
		return err
	}
	// The router matches on path and method only (servers were removed).
	route, params, err := r.FindRoute(req)
	if err != nil {
		// Unknown routes must still answer in the error format: a 404/405
		// from the service for a path outside the contract.
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
			return validateErrorBody(resp, body)
		}
		return fmt.Errorf("%s %s is not in the OpenAPI document (status %d)", req.Method, req.URL.Path, resp.StatusCode)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    req,
			PathParams: params,
			Route:      route,
			Options:    &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status: resp.StatusCode,
		Header: resp.Header,
		Body:   io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true, // a status the operation does not declare (and no default) fails
			MultiError:            true,
		},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s %s → %d does not conform to the OpenAPI document: %w\nbody: %s",
			req.Method, req.URL.Path, resp.StatusCode, err, truncate(body, 2000))
	}
	if err := validateResponseSecond(req, resp, body); err != nil {
		return fmt.Errorf("%w\nbody: %s", err, truncate(body, 2000))
	}
	return undeclaredHeaders(route.Operation, resp)
}

// middlewareHeaders are the headers the service's middleware adds to
// responses it does not otherwise describe; the document must declare each
// one on every response that carries it (validators ignore undeclared
// headers, so without this check the document could stay silent about them).
var middlewareHeaders = []string{"request_id", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After", "Idempotent-Replayed",
	"Deprecation", "Sunset", "Link"}

// fullyDeclared are the operations outside the generated server (OAuth and
// operational endpoints) whose handlers set headers of their own: every
// header on their responses, beyond the transport's, must be declared.
var fullyDeclared = map[string]bool{
	"exchangeToken": true, "revokeToken": true, "getOpenAPIDocument": true, "metrics": true, "docs": true,
}

// transportHeaders describe the message, not the API: never declared.
var transportHeaders = map[string]bool{"Content-Type": true, "Content-Length": true, "Date": true, "Transfer-Encoding": true, "Connection": true}

func undeclaredHeaders(op *openapi3.Operation, resp *http.Response) error {
	ref := op.Responses.Status(resp.StatusCode)
	if ref == nil {
		ref = op.Responses.Default()
	}
	if ref == nil || ref.Value == nil {
		return nil // ValidateResponse has refused an undeclared status already
	}
	for _, h := range middlewareHeaders {
		if resp.Header.Get(h) == "" {
			continue
		}
		if _, ok := ref.Value.Headers[h]; !ok {
			return fmt.Errorf("%s → %d carries the %s header, which the OpenAPI document does not declare on that response",
				op.OperationID, resp.StatusCode, h)
		}
	}
	if fullyDeclared[op.OperationID] {
		for h := range resp.Header {
			if transportHeaders[h] {
				continue
			}
			declared := false
			for k := range ref.Value.Headers {
				declared = declared || strings.EqualFold(k, h)
			}
			if !declared {
				return fmt.Errorf("%s → %d carries the %s header, which the OpenAPI document does not declare on that response",
					op.OperationID, resp.StatusCode, h)
			}
		}
	}
	return nil
}

// validateErrorBody checks a body against the Error schema.
func validateErrorBody(resp *http.Response, body []byte) error {
	r, err := specRouter()
	if err != nil {
		return err
	}
	_ = r
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") && resp.Request != nil && web.WantsHTML(resp.Request) {
		// A browser outside the API gets an error page (httpapi.errorHandler).
		return nil
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return fmt.Errorf("error response is %q, not JSON: %s", resp.Header.Get("Content-Type"), truncate(body, 500))
	}
	spec, err := openapi.Shared()
	if err != nil {
		return err
	}
	var v any
	if err := jsonUnmarshal(body, &v); err != nil {
		return fmt.Errorf("error body is not JSON: %w", err)
	}
	if err := spec.Components.Schemas["Error"].Value.VisitJSON(v); err != nil {
		return fmt.Errorf("error body does not match Error: %w", err)
	}
	return nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// ValidatingTransport validates every response that passes through it
// against the OpenAPI document and reports mismatches as test failures. It
// also sets the Host header of the tenant being addressed.
type ValidatingTransport struct {
	T    testing.TB
	Host string // e.g. "acme.localhost"; empty keeps the request's own
	Base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (v *ValidatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if v.Host != "" {
		req = req.Clone(req.Context())
		req.Host = v.Host
	}
	base := v.Base
	if base == nil {
		base = http.DefaultTransport
	}
	// Keep a copy of the request for route matching (the body is not needed).
	resp, err := base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if verr := ValidateResponse(req, resp, body); verr != nil {
		v.T.Errorf("conformance: %v", verr)
	}
	return resp, nil
}

// ValidateEvent checks a webhook delivery body against the OpenAPI
// document: the schema of its event kind, formats included.
func ValidateEvent(body []byte) error {
	spec, err := openapi.Shared()
	if err != nil {
		return err
	}
	var v map[string]any
	if err := jsonUnmarshal(body, &v); err != nil {
		return fmt.Errorf("event body is not a JSON object: %w", err)
	}
	kind, _ := v["event"].(string)
	name, ok := eventSchema(spec, kind)
	if !ok {
		return fmt.Errorf("unknown event kind %q", kind)
	}
	ref := spec.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("the document has no schema %s", name)
	}
	var generic any
	if err := jsonUnmarshal(body, &generic); err != nil {
		return err
	}
	if err := ref.Value.VisitJSON(generic, openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("%s delivery does not match %s: %w", kind, name, err)
	}
	return validateEventSecond(name, body)
}

// eventSchema is the schema a delivery of kind must match: the request
// body of its callback on createWebhook (openapi.Events), read from the
// spec rather than restated here.
func eventSchema(spec *openapi3.T, kind string) (string, bool) {
	events, err := openapi.Events(spec)
	if err != nil {
		return "", false
	}
	for _, e := range events {
		if e.Kind == kind {
			return e.Schema, true
		}
	}
	return "", false
}
