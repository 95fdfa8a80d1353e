// Package apitest is the HTTP test harness: it runs the real server
// in-process (httptest) over a fresh database, addresses tenants through
// their Host, and validates every response against the OpenAPI document,
// failing the test on any mismatch.
//
//	env := apitest.New(t)                      // SQLite; apitest.Each for both dialects
//	acme := env.Tenant("acme")
//	tok := acme.Token(acme.User(auth.RoleAdmin), auth.AllScopes...)
//	resp := acme.Do("GET", "/api/1.0/me", tok, nil)
//	resp.Status(t, 200).Decode(t, &me)
package apitest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/finsvc/finsvc/gen/apiclient"
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/users"
)

var jsonUnmarshal = json.Unmarshal

// HashParams is the argon2id cost of passwords set through the harness:
// a tiny one, so that suites creating many users stay fast under -race
// (production uses users.DefaultHashParams; hashes carry their parameters,
// so nothing else changes).
var HashParams = users.HashParams{MemoryKiB: 64, Time: 1, Threads: 1, KeyLen: 32, SaltLen: 16}

// Env is one running server over one database.
type Env struct {
	T      testing.TB
	DB     *db.DB
	Config *config.Config
	// App is the service under test, built by app.New like production's;
	// its background work (deliveries, janitor, token cache listener) runs
	// only if the test calls App.Start.
	App    *app.App
	Server *httptest.Server
	Tokens *Tokens

	appOpts  []app.Option
	realAuth bool
}

// Option adjusts the server before it starts.
type Option func(*Env)

// WithDB uses d instead of a fresh SQLite database.
func WithDB(d *db.DB) Option { return func(e *Env) { e.DB = d } }

// WithConfig adjusts the configuration.
func WithConfig(fn func(*config.Config)) Option { return func(e *Env) { fn(e.Config) } }

// WithApp passes opts to app.New after the harness's own (WithDB, a test
// logger, an uncached tenant resolver and Tokens as the authenticator), so
// that they replace those: app.WithDB(counted) serves through a
// query-counting handle while the harness seeds through Env.DB.
func WithApp(opts ...app.Option) Option {
	return func(e *Env) { e.appOpts = append(e.appOpts, opts...) }
}

// WithOAuth checks bearer tokens with the real OAuth service (App.OAuth())
// instead of the in-memory Tokens.
func WithOAuth() Option { return func(e *Env) { e.realAuth = true } }

// WithTokens uses k as the in-memory authenticator (a test may wrap it and
// give the wrapper to app.WithAuthenticator).
func WithTokens(k *Tokens) Option { return func(e *Env) { e.Tokens = k } }

// New starts a server over a fresh SQLite database (or WithDB's).
func New(t testing.TB, opts ...Option) *Env {
	t.Helper()
	e := &Env{T: t, Config: config.Default(), Tokens: NewTokens()}
	e.Config.RateLimitRPS = 0 // tests that want limits turn them on
	e.Config.RateLimitAddressRPS = 0
	// serve resolves the global secret before building the server; tests
	// get a fixed one (options may replace it).
	e.Config.Secret = "apitest-global-secret-0123456789abcdef"
	for _, o := range opts {
		o(e)
	}
	if e.DB == nil {
		e.DB = testdb.SQLite(t)
	}
	if e.DB.Dialect == db.Postgres && e.Config.DatabaseDirectURL == "" {
		// The delivery worker LISTENs on a session of its own: direct,
		// even when the suite runs behind PgBouncer.
		_, e.Config.DatabaseDirectURL = testdb.URLs(t, e.DB)
	}
	base := []app.Option{
		app.WithDB(e.DB),
		app.WithLogger(testdb.Logger()),
		// The real resolver, uncached so that tenants created mid-test resolve.
		app.WithTenants(tenant.NewStore(e.DB, tenant.WithCacheTTL(0))),
		app.WithPasswordHashing(HashParams),
	}
	if !e.realAuth {
		base = append(base, app.WithAuthenticator(e.Tokens))
	}
	a, err := app.New(e.Config, append(base, e.appOpts...)...)
	if err != nil {
		t.Fatalf("apitest: build server: %v", err)
	}
	e.App = a
	t.Cleanup(func() { _ = a.Close() }) // after the server's close (cleanups run last first)
	e.Server = httptest.NewServer(a.Handler())
	t.Cleanup(e.Server.Close)
	return e
}

// Each runs fn on a server over SQLite and one over PostgreSQL (skipped
// without FINSVC_TEST_DATABASE_URL).
func Each(t *testing.T, fn func(t *testing.T, env *Env), opts ...Option) {
	t.Helper()
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			fn(t, New(t, append([]Option{WithDB(testdb.Open(t, dialect))}, opts...)...))
		})
	}
}

// TenantEnv addresses one tenant of an Env.
type TenantEnv struct {
	*Env
	Tenant *tenant.Tenant
	Ctx    context.Context // carries the tenant, for calling stores directly
	Host   string
}

// Tenant creates tenant slug and returns a handle that sends requests to
// its host.
func (e *Env) Tenant(slug string) *TenantEnv {
	e.T.Helper()
	ctx, tn := testdb.NewTenant(e.T, e.DB, slug)
	return &TenantEnv{Env: e, Tenant: tn, Ctx: ctx, Host: slug + "." + e.Config.BaseDomain}
}

// User creates a user with role in the tenant and returns its id.
func (te *TenantEnv) User(role string) int64 {
	te.T.Helper()
	id, err := db.NextID(te.DB.DB, te.Tenant.ID, "users")
	if err != nil {
		te.T.Fatalf("apitest: user id: %v", err)
	}
	row := map[string]any{
		"tenant_id": te.Tenant.ID, "id": id, "email": fmt.Sprintf("%s-%d@%s", role, id, te.Host),
		"name": fmt.Sprintf("%s %d", role, id), "role": role, "password_hash": "!",
	}
	if err := te.DB.Table("users").Create(row).Error; err != nil {
		te.T.Fatalf("apitest: create user: %v", err)
	}
	return id
}

// Token returns a bearer token for user with scopes, acting through a test
// app. (OAuth tests mint real tokens; the resource tests need only a
// principal, and this keeps them fast.)
func (te *TenantEnv) Token(userID int64, scopes ...string) string {
	te.T.Helper()
	var role string
	if err := te.DB.Table("users").Where("tenant_id = ? AND id = ?", te.Tenant.ID, userID).Pluck("role", &role).Error; err != nil || role == "" {
		te.T.Fatalf("apitest: user %d not found: %v", userID, err)
	}
	return te.Tokens.Issue(&auth.Principal{
		TenantID: te.Tenant.ID, UserID: userID, Role: role, ClientID: "test-app", Scopes: scopes,
	})
}

// AdminToken is a token of a new admin with every scope.
func (te *TenantEnv) AdminToken() string { return te.Token(te.User(auth.RoleAdmin), auth.AllScopes...) }

// Do sends a request to the tenant's host. body is JSON-encoded unless it is
// a string or []byte (sent as is). The response is validated against the
// OpenAPI document.
func (te *TenantEnv) Do(method, path, token string, body any) *Response {
	te.T.Helper()
	return te.Env.Do(te.Host, method, path, token, body)
}

// DoHeader is Do with extra request headers.
func (te *TenantEnv) DoHeader(method, path, token string, body any, h http.Header) *Response {
	te.T.Helper()
	return te.Env.DoHeader(te.Host, method, path, token, body, h)
}

// Do sends a request with the given Host.
func (e *Env) Do(host, method, path, token string, body any) *Response {
	e.T.Helper()
	return e.DoHeader(host, method, path, token, body, nil)
}

// DoHeader is Do with extra request headers.
func (e *Env) DoHeader(host, method, path, token string, body any, h http.Header) *Response {
	e.T.Helper()
	var r io.Reader
	ct := ""
	switch b := body.(type) {
	case nil:
	case string:
		r, ct = strings.NewReader(b), "application/json"
	case []byte:
		r, ct = bytes.NewReader(b), "application/json"
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			e.T.Fatalf("apitest: marshal body: %v", err)
		}
		r, ct = bytes.NewReader(buf), "application/json"
	}
	req, err := http.NewRequest(method, e.Server.URL+path, r)
	if err != nil {
		e.T.Fatalf("apitest: %v", err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range h {
		req.Header[http.CanonicalHeaderKey(k)] = v
	}
	return e.Send(host, req)
}

// Send sends req with Host host through the validating transport.
func (e *Env) Send(host string, req *http.Request) *Response {
	e.T.Helper()
	c := &http.Client{
		Transport:     &ValidatingTransport{T: e.T, Host: host},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := c.Do(req)
	if err != nil {
		e.T.Fatalf("apitest: %s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return &Response{Code: resp.StatusCode, Header: resp.Header, Body: b}
}

// HTTPClient returns an http.Client for the generated API client: it sets
// the tenant's Host and validates every response.
func (te *TenantEnv) HTTPClient() *http.Client {
	return &http.Client{Transport: &ValidatingTransport{T: te.T, Host: te.Host}}
}

// APIClient returns the generated client for the tenant, authenticated with
// token, validating every response.
func (te *TenantEnv) APIClient(token string) *apiclient.ClientWithResponses {
	te.T.Helper()
	c, err := apiclient.NewClientWithResponses(te.Server.URL,
		apiclient.WithHTTPClient(te.HTTPClient()),
		apiclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+token)
			return nil
		}))
	if err != nil {
		te.T.Fatalf("apitest: client: %v", err)
	}
	return c
}

// Response is a received response.
type Response struct {
	Code   int
	Header http.Header
	Body   []byte
}

// Status fails the test unless the status is want.
func (r *Response) Status(t testing.TB, want int) *Response {
	t.Helper()
	if r.Code != want {
		t.Fatalf("status = %d, want %d; body: %s", r.Code, want, truncate(r.Body, 2000))
	}
	return r
}

// Decode unmarshals the JSON body into v.
func (r *Response) Decode(t testing.TB, v any) *Response {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", truncate(r.Body, 500), err)
	}
	return r
}

// Err decodes the error body.
func (r *Response) Err(t testing.TB) models.Error {
	t.Helper()
	var e models.Error
	r.Decode(t, &e)
	return e
}

// Tokens is an in-memory Authenticator for handler tests.
type Tokens struct {
	mu sync.Mutex
	m  map[string]*auth.Principal
}

// NewTokens returns an empty token registry.
func NewTokens() *Tokens { return &Tokens{m: map[string]*auth.Principal{}} }

// Issue registers p under a new random token.
func (k *Tokens) Issue(p *auth.Principal) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	tok := "test_" + hex.EncodeToString(b[:])
	k.mu.Lock()
	k.m[tok] = p
	k.mu.Unlock()
	return tok
}

// Revoke forgets tok.
func (k *Tokens) Revoke(tok string) { k.mu.Lock(); delete(k.m, tok); k.mu.Unlock() }

// AuthenticateBearer checks tok against the issued tokens.
func (k *Tokens) AuthenticateBearer(_ context.Context, tok string) (*auth.Principal, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	p, ok := k.m[tok]
	if !ok {
		return nil, apperr.E(apperr.Unauthenticated, "the access token is invalid")
	}
	cp := *p
	return &cp, nil
}
