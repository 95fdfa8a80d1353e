package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/authspec"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/httpapi"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/openapi"
)

func TestTenantResolution(t *testing.T) {
	env := apitest.New(t)
	acme := env.Tenant("acme")
	tok := acme.AdminToken()

	cases := []struct {
		name, host string
		want       int
	}{
		{"known tenant", "acme.localhost", http.StatusOK},
		{"known tenant with port", "acme.localhost:8080", http.StatusOK},
		{"upper-case host", "ACME.localhost", http.StatusOK},
		{"unknown tenant", "nobody.localhost", http.StatusNotFound},
		{"outside base domain", "acme.example.com", http.StatusNotFound},
		{"bare base domain", "localhost", http.StatusNotFound},
		{"nested subdomain", "x.acme.localhost", http.StatusNotFound},
		{"suffix trick", "acmelocalhost", http.StatusNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// What matters is whether the request got past tenant resolution.
			resp := env.Do(c.host, "GET", "/api/1.0/me", tok, nil)
			if c.want == http.StatusNotFound {
				resp.Status(t, http.StatusNotFound)
				if e := resp.Err(t); e.Message == "" || e.Errors == nil {
					t.Fatalf("404 body not in the error format: %s", resp.Body)
				}
				return
			}
			if resp.Code == http.StatusNotFound {
				t.Fatalf("known tenant got 404: %s", resp.Body)
			}
		})
	}
}

func TestOperationalEndpointsAnswerOnAnyHost(t *testing.T) {
	env := apitest.New(t)
	for _, host := range []string{"demo.localhost", "127.0.0.1", "nobody.example.com"} {
		env.Do(host, "GET", "/healthz", "", nil).Status(t, http.StatusOK)
		env.Do(host, "GET", "/readyz", "", nil).Status(t, http.StatusOK)
	}
	resp := env.Do("x", "GET", "/openapi.yaml", "", nil).Status(t, http.StatusOK)
	if string(resp.Body) != string(openapi.Document) {
		t.Fatal("/openapi.yaml differs from openapi/finsvc.yaml")
	}
}

func TestRequestID(t *testing.T) {
	env := apitest.New(t)
	resp := env.Do("x", "GET", "/healthz", "", nil)
	if resp.Header.Get("request_id") == "" {
		t.Fatal("no request_id header")
	}
	req, _ := http.NewRequest("GET", env.Server.URL+"/healthz", nil)
	req.Header.Set("X-Request-Id", "abc-123")
	if got := env.Send("x", req).Header.Get("request_id"); got != "abc-123" {
		t.Fatalf("request_id = %q, want the incoming X-Request-Id", got)
	}
	req, _ = http.NewRequest("GET", env.Server.URL+"/healthz", nil)
	req.Header.Set("X-Request-Id", "bad id <script>")
	if got := env.Send("x", req).Header.Get("request_id"); got == "" || strings.ContainsAny(got, " <") {
		t.Fatalf("request_id = %q, want a fresh id for an unsafe incoming one", got)
	}
}

func TestBearerRequired(t *testing.T) {
	env := apitest.New(t)
	acme := env.Tenant("acme")
	other := env.Tenant("other")
	foreign := other.AdminToken()
	for name, header := range map[string]string{
		"missing":          "",
		"basic scheme":     "Basic YWJjOmRlZg==",
		"empty bearer":     "Bearer ",
		"unknown token":    "Bearer nope",
		"two tokens":       "Bearer a b",
		"foreign tenant":   "Bearer " + foreign,
		"token in garbage": "Bearerxyz",
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", env.Server.URL+"/api/1.0/clients", nil)
			if header != "" {
				req.Header.Set("Authorization", header)
			}
			resp := env.Send(acme.Host, req).Status(t, http.StatusUnauthorized)
			if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("WWW-Authenticate = %q", resp.Header.Get("WWW-Authenticate"))
			}
			if resp.Err(t).Message == "" {
				t.Fatal("empty message")
			}
		})
	}
}

// Every operation with a JSON body answers 400 in the error format for a
// malformed body, never 500; an empty body is malformed where the body is
// required (where it is optional, it is no body).
func TestMalformedJSONIsBadRequest(t *testing.T) {
	env := apitest.New(t)
	acme := env.Tenant("acme")
	tok := acme.AdminToken()
	for _, op := range jsonBodyOperations(t) {
		method, p := op.method, op.path
		for _, body := range []string{`{"a":`, `not json`, `[1,2`, `{"title": 12}`, ``} {
			if body == "" && op.optional {
				continue
			}
			resp := acme.Do(method, op.url, tok, body)
			if resp.Code != http.StatusBadRequest {
				t.Errorf("%s %s with body %q: status %d, want 400; %s", method, p, body, resp.Code, resp.Body)
				continue
			}
			if e := resp.Err(t); len(e.Errors) == 0 {
				t.Errorf("%s %s: no field-level errors: %s", method, p, resp.Body)
			}
		}
	}
}

func TestQueryValidation(t *testing.T) {
	env := apitest.New(t)
	acme := env.Tenant("acme")
	tok := acme.AdminToken()
	for _, q := range []string{"page=abc", "page=0", "limit=0", "limit=101", "limit=-5", "page=1.5"} {
		resp := acme.Do("GET", "/api/1.0/clients?"+q, tok, nil).Status(t, http.StatusBadRequest)
		e := resp.Err(t)
		field := strings.SplitN(q, "=", 2)[0]
		if len(e.Errors[field]) == 0 {
			t.Errorf("%s: errors = %v, want a message for %q", q, e.Errors, field)
		}
	}
	resp := acme.Do("GET", "/api/1.0/clients/not-a-number", tok, nil).Status(t, http.StatusBadRequest)
	if len(resp.Err(t).Errors["id"]) == 0 {
		t.Errorf("non-numeric id: %s", resp.Body)
	}
	acme.Do("GET", "/api/1.0/acts/not-a-uuid", tok, nil).Status(t, http.StatusBadRequest)
}

func TestUnknownRouteAndMethod(t *testing.T) {
	env := apitest.New(t)
	acme := env.Tenant("acme")
	tok := acme.Token(acme.User(auth.RoleViewer), auth.AllScopes...)
	acme.Do("GET", "/api/1.0/nope", tok, nil).Status(t, http.StatusNotFound)
	acme.Do("DELETE", "/api/1.0/me", tok, nil).Status(t, http.StatusMethodNotAllowed)
}

func TestBodyTooLarge(t *testing.T) {
	env := apitest.New(t, apitest.WithConfig(func(c *config.Config) { c.BodyLimit = 1024 }))
	acme := env.Tenant("acme")
	big := `{"company_name":"` + strings.Repeat("x", 4096) + `"}`
	resp := acme.Do("POST", "/api/1.0/clients", acme.AdminToken(), big).Status(t, http.StatusRequestEntityTooLarge)
	if resp.Err(t).Message == "" {
		t.Fatal("no message")
	}
}

// Every operation that takes a body declares the 413 the body limit answers
// (the harness fails on an undeclared status), and answers it before any
// authentication or parsing: the oversized body is sent without a token.
func TestBodyTooLargeEveryOperation(t *testing.T) {
	env := apitest.New(t, apitest.WithConfig(func(c *config.Config) { c.BodyLimit = 1024 }))
	acme := env.Tenant("acme")
	spec, err := httpapi.Spec()
	if err != nil {
		t.Fatal(err)
	}
	params := strings.NewReplacer("{id}", "1", "{act_uuid}", "7b0c4a1e-3d5f-4b8a-9c2d-1e2f3a4b5c6d",
		"{data_id}", "1", "{delivery_id}", "1", "{fetch_request_id}", "3f0c1d9e-8a53-4c1e-9a43-0d2b7f7c2a11")
	n := 0
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody == nil {
				continue
			}
			n++
			for ct := range op.RequestBody.Value.Content {
				t.Run(op.OperationID+" "+ct, func(t *testing.T) {
					req, err := http.NewRequest(method, env.Server.URL+params.Replace(path), strings.NewReader(strings.Repeat("x", 4096)))
					if err != nil {
						t.Fatal(err)
					}
					req.Header.Set("Content-Type", ct)
					resp := env.Send(acme.Host, req).Status(t, http.StatusRequestEntityTooLarge)
					if resp.Err(t).Message != "request body too large" {
						t.Errorf("message %q", resp.Err(t).Message)
					}
				})
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d operations with a body", n)
	}
}

// The HTTP layer builds nothing: a missing service is a startup error, not
// a nil dereference on the first request.
func TestNewRefusesMissingServices(t *testing.T) {
	pol, err := authspec.Load()
	if err != nil {
		t.Fatal(err)
	}
	_, err = httpapi.New(httpapi.Deps{Config: config.Default(), Logger: testdb.Logger(), Tenants: tenant.NewStore(nil), Policy: pol})
	if err == nil || !strings.Contains(err.Error(), "every service is required") {
		t.Fatalf("New without services: %v", err)
	}
}

func TestFormatErrorsArePlain(t *testing.T) {
	env := apitest.New(t)
	acme := env.Tenant("acme")
	tok := acme.AdminToken()
	e := acme.Do("GET", "/api/1.0/acts/not-a-uuid", tok, nil).Status(t, http.StatusBadRequest).Err(t)
	if got := e.Errors["act_uuid"]; len(got) != 1 || !strings.HasPrefix(got[0], "must be a UUID") {
		t.Fatalf("errors = %v, want a plain UUID message", e.Errors)
	}
}

// TestBrowsersGetPages: outside the API, a client that accepts text/html
// (a browser) gets an HTML page for an unknown host, page or tenant root;
// API clients and anything under /api/ keep the error format.
func TestBrowsersGetPages(t *testing.T) {
	env := apitest.New(t, apitest.WithOAuth())
	env.Tenant("acme")
	browser := "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	send := func(host, path, accept string) *apitest.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", env.Server.URL+path, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		return env.Send(host, req)
	}
	for _, c := range []struct {
		host, path, accept string
		status             int
		html               bool
		want               string
	}{
		{"nobody.localhost", "/", browser, 404, true, "Unknown address"},
		{"acme.example.com", "/login", browser, 404, true, "Unknown address"},
		{"acme.localhost", "/no-such-page", browser, 404, true, "Page not found"},
		{"acme.localhost", "/", browser, http.StatusFound, false, ""},
		{"nobody.localhost", "/", "application/json", 404, false, "unknown tenant"},
		{"nobody.localhost", "/", "", 404, false, "unknown tenant"},
		{"acme.localhost", "/", "", 404, false, ""},
		{"acme.localhost", "/api/nothing", browser, 404, false, ""},
		{"acme.localhost", "/api/1.0/me", browser, 401, false, ""},
	} {
		resp := send(c.host, c.path, c.accept)
		ct := resp.Header.Get("Content-Type")
		if resp.Code != c.status || strings.HasPrefix(ct, "text/html") != c.html || !strings.Contains(string(resp.Body), c.want) {
			t.Errorf("%s%s (Accept %q): %d %s %q", c.host, c.path, c.accept, resp.Code, ct, resp.Body)
		}
		if c.html && (resp.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(string(resp.Body), `href="/assets/console.css"`)) {
			t.Errorf("%s%s: page without the frame refusal or the stylesheet", c.host, c.path)
		}
	}
	// An unknown host's page leads on to a page that answers there, not
	// to its own "/" (the same page again).
	if body := string(send("nobody.localhost", "/", browser).Body); !strings.Contains(body, `<a href="/docs" id="home">`) {
		t.Errorf("unknown host: no way on to /docs: %s", body)
	}
	// The stylesheet answers on any host, so that those pages are styled.
	css := env.Do("nobody.localhost", "GET", "/assets/console.css", "", nil).Status(t, http.StatusOK)
	if !strings.HasPrefix(css.Header.Get("Content-Type"), "text/css") || len(css.Body) < 100 {
		t.Fatalf("stylesheet: %s %d bytes", css.Header.Get("Content-Type"), len(css.Body))
	}
}
