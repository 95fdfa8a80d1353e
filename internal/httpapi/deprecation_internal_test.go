package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/gen/models"
)

// stubServer answers the two operations the test calls; any other would
// panic on the nil interface.
type stubServer struct{ apiserver.ServerInterface }

func (stubServer) GetClient(c echo.Context, _ models.ClientId) error {
	return c.JSON(http.StatusOK, map[string]any{})
}
func (stubServer) DeleteClient(c echo.Context, _ models.ClientId) error {
	return c.NoContent(http.StatusNoContent)
}
func (stubServer) GetMe(c echo.Context) error { return c.JSON(http.StatusOK, map[string]any{}) }
func (stubServer) UpdateClient(c echo.Context, _ models.ClientId) error {
	// The handler still reads the body the middleware looked into.
	var body map[string]any
	if err := c.Bind(&body); err != nil || len(body) == 0 {
		return c.NoContent(http.StatusTeapot)
	}
	return c.JSON(http.StatusOK, map[string]any{})
}

func specCopy(t *testing.T) *openapi3.T {
	t.Helper()
	spec, err := Spec()
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// undeprecated is the spec without its own deprecations (the request
// property event of the webhook registrations), for tests that edit the
// shared responses those declare their headers on.
func undeprecated(t *testing.T) *openapi3.T {
	t.Helper()
	spec := specCopy(t)
	for _, name := range []string{"WebhookCreate", "WebhookUpdate"} {
		p := spec.Components.Schemas[name].Value.Properties["event"].Value
		p.Deprecated, p.Extensions = false, nil
	}
	return spec
}

func deprecate(op *openapi3.Operation, ext map[string]any) {
	op.Deprecated = true
	op.Extensions = ext
	declareDeprecation(op)
}

// declareDeprecation declares the three headers on every response of op, as
// the spec must for an operation that can send them (shared responses are
// changed too: the spec is a copy).
func declareDeprecation(op *openapi3.Operation) {
	for _, r := range op.Responses.Map() {
		if r.Value.Headers == nil {
			r.Value.Headers = openapi3.Headers{}
		}
		for _, h := range []string{"Deprecation", "Sunset", "Link"} {
			r.Value.Headers[h] = &openapi3.HeaderRef{Value: &openapi3.Header{Parameter: openapi3.Parameter{Schema: openapi3.NewSchemaRef("", openapi3.NewStringSchema())}}}
		}
	}
}

// served routes the generated server's own registrations through the
// middleware built from spec, as New does.
func served(t *testing.T, spec *openapi3.T) *echo.Echo {
	t.Helper()
	mw, err := deprecation(spec)
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	e.Use(mw)
	apiserver.RegisterHandlers(e, stubServer{})
	return e
}

func call(e *echo.Echo, method, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

// A copy of the spec deprecates getClient (with a sunset) and deleteClient
// (without one, linking its own changelog entry): their responses carry the
// headers, errors included, and other operations' responses do not.
func TestDeprecationHeaders(t *testing.T) {
	spec := specCopy(t)
	item := spec.Paths.Value("/api/1.0/clients/{id}")
	deprecate(item.Get, map[string]any{extDeprecatedAt: "2027-01-15", extSunset: "2027-07-15T00:00:00Z"})
	deprecate(item.Delete, map[string]any{extDeprecatedAt: "2027-02-01T00:00:00Z", extDeprecationLink: "https://example.test/changelog#1.1.0"})
	e := served(t, spec)

	for _, path := range []string{"/api/1.0/clients/42", "/api/1.0/clients/not-a-number"} {
		rec := call(e, http.MethodGet, path)
		if path == "/api/1.0/clients/not-a-number" && rec.Code != http.StatusBadRequest {
			t.Fatalf("GET %s = %d, want the generated wrapper's 400", path, rec.Code)
		}
		want := map[string]string{
			"Deprecation": "@1799971200", // 2027-01-15T00:00:00Z
			"Sunset":      "Thu, 15 Jul 2027 00:00:00 GMT",
			"Link":        `<` + ChangelogURL + `>; rel="deprecation"`,
		}
		for k, v := range want {
			if got := rec.Header().Values(k); len(got) != 1 || got[0] != v {
				t.Errorf("GET %s → %d: %s = %q, want %q", path, rec.Code, k, got, v)
			}
		}
	}

	rec := call(e, http.MethodDelete, "/api/1.0/clients/42")
	if got := rec.Header().Get("Deprecation"); got != "@1801440000" {
		t.Errorf("DELETE: Deprecation = %q, want @1801440000", got)
	}
	if got := rec.Header().Get("Link"); got != `<https://example.test/changelog#1.1.0>; rel="deprecation"` {
		t.Errorf("DELETE: Link = %q, want the operation's own entry", got)
	}
	if got := rec.Header().Values("Sunset"); got != nil {
		t.Errorf("DELETE: Sunset = %q without x-sunset", got)
	}

	rec = call(e, http.MethodGet, "/api/1.0/me")
	for _, k := range []string{"Deprecation", "Sunset", "Link"} {
		if got := rec.Header().Values(k); got != nil {
			t.Errorf("GET /api/1.0/me (not deprecated): %s = %q", k, got)
		}
	}
}

// The map is keyed the way echo reports the matched route: with every
// operation of the spec deprecated, each /api/1.0 key is a route the
// generated server registers, and the other paths (OAuth, operational) have
// no parameters to translate.
func TestDeprecationKeysAreEchoRoutes(t *testing.T) {
	spec := specCopy(t)
	ops := 0
	for _, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			deprecate(op, map[string]any{extDeprecatedAt: "2027-01-15"})
			ops++
		}
	}
	byRoute, err := deprecationsFrom(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(byRoute) != ops {
		t.Fatalf("%d keys for %d operations", len(byRoute), ops)
	}
	e := echo.New()
	apiserver.RegisterHandlers(e, nil) // registering calls no handler
	routes := map[string]bool{}
	for _, r := range e.Routes() {
		routes[routeKey(r.Method, r.Path)] = true
	}
	api := 0
	for key := range byRoute {
		path := strings.SplitN(key, " ", 2)[1]
		switch {
		case strings.HasPrefix(path, "/api/1.0/"):
			api++
			if !routes[key] {
				t.Errorf("%s is not a route of the generated server", key)
			}
		case strings.ContainsAny(path, ":{"):
			t.Errorf("%s: a parameter outside /api/1.0, registered by hand; check its spelling", key)
		}
	}
	if api < 30 {
		t.Fatalf("only %d /api/1.0 operations", api)
	}
}

// What would make the headers wrong stops the server from starting.
func TestDeprecationRefusesBadSpecs(t *testing.T) {
	cases := []struct {
		name string
		ext  map[string]any
		dep  bool
		want string
	}{
		{"deprecated without a date", map[string]any{extSunset: "2028-01-01"}, true, "getClient: deprecated without x-deprecated-at"},
		{"sunset too soon", map[string]any{extDeprecatedAt: "2027-01-15", extSunset: "2027-04-15"}, true, "less than 6 months after"},
		{"sunset before deprecation", map[string]any{extDeprecatedAt: "2027-01-15", extSunset: "2026-12-01"}, true, "less than 6 months after"},
		{"unreadable date", map[string]any{extDeprecatedAt: "next spring"}, true, "x-deprecated-at next spring is neither a date"},
		{"dates without deprecated", map[string]any{extSunset: "2028-01-01"}, false, "not deprecated"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := specCopy(t)
			op := spec.Paths.Value("/api/1.0/clients/{id}").Get
			op.Deprecated = c.dep
			op.Extensions = c.ext
			if _, err := deprecation(spec); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// An operation that can send the headers must declare them on every
// response: deprecated, or with a deprecated property in its request body.
func TestDeprecationRefusesUndeclaredHeaders(t *testing.T) {
	spec := undeprecated(t)
	op := spec.Paths.Value("/api/1.0/clients/{id}").Get
	op.Deprecated = true
	op.Extensions = map[string]any{extDeprecatedAt: "2027-01-15", extSunset: "2027-07-15"}
	if _, err := deprecation(spec); err == nil || !strings.Contains(err.Error(), "operation getClient: response 200 sends but does not declare Deprecation, Sunset, Link") {
		t.Fatalf("err = %v", err)
	}
	declareDeprecation(op)
	delete(op.Responses.Value("404").Value.Headers, "Sunset")
	if _, err := deprecation(spec); err == nil || !strings.Contains(err.Error(), "response 404 sends but does not declare Sunset") || strings.Contains(err.Error(), "response 200") {
		t.Fatalf("err = %v", err)
	}
	// Without x-sunset, Sunset is never sent and need not be declared.
	op.Extensions = map[string]any{extDeprecatedAt: "2027-01-15"}
	if _, err := deprecation(spec); err != nil {
		t.Fatal(err)
	}

	spec = specCopy(t)
	prop := spec.Components.Schemas["ClientUpdate"].Value.Properties["org_number"].Value
	prop.Deprecated = true
	prop.Extensions = map[string]any{extDeprecatedAt: "2027-01-15"}
	if _, err := deprecation(spec); err == nil || !strings.Contains(err.Error(), "operation updateClient: response 200 sends but does not declare Deprecation, Link") {
		t.Fatalf("err = %v", err)
	}
	declareDeprecation(spec.Paths.Value("/api/1.0/clients/{id}").Patch)
	if _, err := deprecation(spec); err != nil {
		t.Fatal(err)
	}
}

// Dates written unquoted in YAML (as a spec author would) read the same.
func TestDeprecationDatesFromYAML(t *testing.T) {
	doc := `openapi: 3.0.3
info: {title: t, version: 1.0.0}
paths:
  /api/1.0/things/{id}:
    get:
      operationId: getThing
      deprecated: true
      x-deprecated-at: 2027-01-15
      x-sunset: 2027-07-15
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses:
        "200": {description: ok}
`
	spec, err := openapi3.NewLoader().LoadFromData([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	byRoute, err := deprecationsFrom(spec)
	if err != nil {
		t.Fatal(err)
	}
	h := byRoute["GET /api/1.0/things/:id"]
	if h.Get("Deprecation") != "@1799971200" || h.Get("Sunset") != "Thu, 15 Jul 2027 00:00:00 GMT" {
		t.Fatalf("headers = %v", h)
	}
}

// Fields: a deprecated property of a request body brings the headers to
// the requests that send it (and only those); a deprecated property of a
// success response brings them to every response of the operation; a bad
// date on a property refuses the start.
func TestDeprecatedFields(t *testing.T) {
	spec := specCopy(t)
	upd := spec.Components.Schemas["ClientUpdate"].Value.Properties["country"].Value
	upd.Deprecated = true
	upd.Extensions = map[string]any{extDeprecatedAt: "2027-03-01", extSunset: "2027-10-01"}
	declareDeprecation(spec.Paths.Value("/api/1.0/clients/{id}").Patch)
	e := served(t, spec)

	send := func(body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPatch, "/api/1.0/clients/1", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		e.ServeHTTP(rec, req)
		return rec
	}
	rec := send(`{"country": "SE"}`)
	if rec.Code != http.StatusOK || rec.Header().Get("Deprecation") != "@1803859200" || rec.Header().Get("Sunset") != "Fri, 01 Oct 2027 00:00:00 GMT" {
		t.Fatalf("PATCH with the deprecated field: %d %v", rec.Code, rec.Header())
	}
	rec = send(`{"company_name": "Nordic Wood AS"}`)
	if rec.Code != http.StatusOK || rec.Header().Get("Deprecation") != "" {
		t.Fatalf("PATCH without it: %d %v", rec.Code, rec.Header())
	}
	if rec := call(e, http.MethodGet, "/api/1.0/clients/1"); rec.Header().Get("Deprecation") != "" {
		t.Fatalf("GET carries a request field's deprecation: %v", rec.Header())
	}

	spec = specCopy(t)
	org := spec.Components.Schemas["Client"].Value.Properties["org_number"].Value
	org.Deprecated = true
	org.Extensions = map[string]any{extDeprecatedAt: "2027-03-01"}
	for _, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			declareDeprecation(op)
		}
	}
	e = served(t, spec)
	if rec := call(e, http.MethodGet, "/api/1.0/clients/1"); rec.Header().Get("Deprecation") != "@1803859200" || rec.Header().Get("Sunset") != "" {
		t.Fatalf("GET of a response with a deprecated field: %v", rec.Header())
	}
	if rec := call(e, http.MethodGet, "/api/1.0/me"); rec.Header().Get("Deprecation") != "" {
		t.Fatalf("an operation without the field: %v", rec.Header())
	}

	org.Extensions = map[string]any{extDeprecatedAt: "soon"}
	if _, err := deprecation(spec); err == nil || !strings.Contains(err.Error(), "org_number") {
		t.Fatalf("a bad date on a property: %v", err)
	}
}
