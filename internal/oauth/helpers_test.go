package oauth_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/oauth"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/users"
)

const (
	testSecret   = "test-global-secret-0123456789abcdefghijklmnop"
	testPassword = "correct horse battery"
	testRedirect = "https://app.example.com/callback"
)

// server is an apitest environment with the real OAuth service wired in.
type server struct {
	*apitest.Env
	svc *oauth.Service
}

type serverOpt struct {
	logger *slog.Logger
	opts   []apitest.Option
}

func newServer(t testing.TB, so serverOpt) *server {
	t.Helper()
	s := &server{}
	opts := append([]apitest.Option{
		apitest.WithConfig(func(c *config.Config) { c.Secret = testSecret }),
		apitest.WithOAuth(),
	}, so.opts...)
	if so.logger != nil {
		opts = append(opts, apitest.WithApp(app.WithLogger(so.logger)))
	}
	s.Env = apitest.New(t, opts...)
	s.svc = s.App.OAuth()
	return s
}

// eachServer runs fn against a fresh server on SQLite and on PostgreSQL.
func eachServer(t *testing.T, fn func(t *testing.T, s *server)) {
	t.Helper()
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			fn(t, newServer(t, serverOpt{logger: testLogger(), opts: []apitest.Option{apitest.WithDB(testdb.Open(t, dialect))}}))
		})
	}
}

// org is one tenant with a user and an app.
type org struct {
	*apitest.TenantEnv
	s        *server
	userID   int64
	email    string
	clientID string
	secret   string
	redirect string
}

func (s *server) org(t testing.TB, slug, role string, scopes ...string) *org {
	t.Helper()
	te := s.Tenant(slug)
	email := role + "@" + slug + ".example.com"
	u, err := users.NewStore(s.DB, users.WithHashParams(apitest.HashParams)).Create(te.Ctx, email, "Test "+role, role, testPassword)
	if err != nil {
		t.Fatalf("create user: %v", err)
	}
	if len(scopes) == 0 {
		scopes = auth.AllScopes
	}
	id, secret, err := oauth.CreateApp(context.Background(), s.DB, te.Tenant.ID, "Test App", []string{testRedirect}, scopes)
	if err != nil {
		t.Fatalf("create app: %v", err)
	}
	return &org{TenantEnv: te, s: s, userID: u.ID, email: email, clientID: id, secret: secret, redirect: testRedirect}
}

// browser is a cookie-keeping client that does not follow redirects and
// validates every response against the API document.
func (o *org) browser(t testing.TB) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{
		Jar:           jar,
		Transport:     &apitest.ValidatingTransport{T: t, Host: o.Host},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type page struct {
	Code     int
	Location string
	Body     string
	Header   http.Header
}

func do(t testing.TB, c *http.Client, method, rawURL string, form url.Values) page {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, rawURL, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, rawURL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return page{Code: resp.StatusCode, Location: resp.Header.Get("Location"), Body: string(b), Header: resp.Header}
}

var (
	csrfRE   = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
	hiddenRE = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
)

func csrfOf(t testing.TB, body string) string {
	t.Helper()
	// The last form's token: the first one may be the logout form's.
	ms := csrfRE.FindAllStringSubmatch(body, -1)
	if ms == nil {
		t.Fatalf("no csrf_token in page: %s", body)
	}
	return html.UnescapeString(ms[len(ms)-1][1])
}

// hiddenFields returns the hidden inputs of the first form containing the
// consent decision.
func hiddenFields(body string) url.Values {
	i := strings.Index(body, `action="/oauth/authorize"`)
	v := url.Values{}
	if i < 0 {
		return v
	}
	for _, m := range hiddenRE.FindAllStringSubmatch(body[i:], -1) {
		v.Set(html.UnescapeString(m[1]), html.UnescapeString(m[2]))
	}
	return v
}

// login signs the browser in as the org's user.
func (o *org) login(t testing.TB, c *http.Client) {
	t.Helper()
	p := do(t, c, "GET", o.Server.URL+"/login", nil)
	if p.Code != 200 {
		t.Fatalf("GET /login = %d", p.Code)
	}
	p = do(t, c, "POST", o.Server.URL+"/login", url.Values{
		"csrf_token": {csrfOf(t, p.Body)}, "email": {o.email}, "password": {testPassword}, "next": {"/account/apps"},
	})
	if p.Code != http.StatusSeeOther {
		t.Fatalf("POST /login = %d: %s", p.Code, p.Body)
	}
}

// authParams are a valid authorization request's parameters.
func (o *org) authParams(state string) url.Values {
	return url.Values{
		"client_id": {o.clientID}, "redirect_uri": {o.redirect}, "response_type": {"code"},
		"state": {state}, "scope": {"clients:read acts:read"},
	}
}

// consent walks GET /oauth/authorize (signed in) and answers the consent
// page with decision; it returns the final redirect.
func (o *org) consent(t testing.TB, c *http.Client, params url.Values, decision string) page {
	t.Helper()
	p := do(t, c, "GET", o.Server.URL+"/oauth/authorize?"+params.Encode(), nil)
	if p.Code == http.StatusFound {
		return p // remembered consent, or an error redirect
	}
	if p.Code != 200 {
		t.Fatalf("GET /oauth/authorize = %d: %s", p.Code, p.Body)
	}
	form := hiddenFields(p.Body)
	form.Set("decision", decision)
	return do(t, c, "POST", o.Server.URL+"/oauth/authorize", form)
}

// code runs the authorization flow and returns a fresh code.
func (o *org) code(t testing.TB, params url.Values) string {
	t.Helper()
	c := o.browser(t)
	o.login(t, c)
	p := o.consent(t, c, params, "allow")
	if p.Code != http.StatusFound {
		t.Fatalf("consent = %d: %s", p.Code, p.Body)
	}
	u, err := url.Parse(p.Location)
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Query().Get("state"); got != params.Get("state") {
		t.Fatalf("state = %q, want %q (location %s)", got, params.Get("state"), p.Location)
	}
	code := u.Query().Get("code")
	if code == "" {
		t.Fatalf("no code in %s", p.Location)
	}
	return code
}

type tokenResult struct {
	Code int
	Body map[string]any
	Resp *http.Response
}

func (r tokenResult) str(k string) string { s, _ := r.Body[k].(string); return s }

type reqStyle struct {
	json  bool
	basic bool
}

// token posts to /api/oauth/token.
func (o *org) token(t testing.TB, form url.Values, st reqStyle) tokenResult {
	t.Helper()
	return o.post(t, "/api/oauth/token", form, st)
}

func (o *org) post(t testing.TB, path string, form url.Values, st reqStyle) tokenResult {
	t.Helper()
	form = cloneValues(form)
	var body io.Reader
	ct := "application/x-www-form-urlencoded"
	var user, pass string
	if st.basic {
		user, pass = form.Get("client_id"), form.Get("client_secret")
		form.Del("client_id")
		form.Del("client_secret")
	}
	if st.json {
		m := map[string]string{}
		for k := range form {
			m[k] = form.Get(k)
		}
		b, _ := json.Marshal(m)
		body, ct = strings.NewReader(string(b)), "application/json"
	} else {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest("POST", o.Server.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Accept", "application/json")
	if st.basic {
		req.SetBasicAuth(url.QueryEscape(user), url.QueryEscape(pass))
	}
	resp, err := o.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	res := tokenResult{Code: resp.StatusCode, Resp: resp}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &res.Body); err != nil {
			t.Fatalf("%s: body is not JSON: %s", path, b)
		}
	}
	return res
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

func (o *org) codeGrant(code string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "client_id": {o.clientID}, "client_secret": {o.secret},
		"redirect_uri": {o.redirect}, "code": {code}}
}

func (o *org) refreshGrant(rt string) url.Values {
	return url.Values{"grant_type": {"refresh_token"}, "client_id": {o.clientID}, "client_secret": {o.secret},
		"refresh_token": {rt}}
}

// tokens runs the whole flow and returns an access and a refresh token.
func (o *org) tokens(t testing.TB) (access, refresh string) {
	t.Helper()
	r := o.token(t, o.codeGrant(o.code(t, o.authParams("state-"+randHex(6)))), reqStyle{})
	if r.Code != 200 {
		t.Fatalf("token = %d: %v", r.Code, r.Body)
	}
	return r.str("access_token"), r.str("refresh_token")
}

// me calls GET /api/1.0/me with token and returns the status.
func (o *org) me(t testing.TB, token string) (int, map[string]any) {
	t.Helper()
	r := o.Do("GET", "/api/1.0/me", token, nil)
	var m map[string]any
	_ = json.Unmarshal(r.Body, &m)
	if r.Code == 401 && r.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("401 without WWW-Authenticate")
	}
	return r.Code, m
}

func expectOAuthError(t testing.TB, r tokenResult, status int, code string) {
	t.Helper()
	if r.Code != status || r.str("error") != code {
		t.Fatalf("got %d %v, want %d error=%s", r.Code, r.Body, status, code)
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func testLogger() *slog.Logger {
	if os.Getenv("FINSVC_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

func (s *server) svcUsers() *users.Store {
	return users.NewStore(s.DB, users.WithHashParams(apitest.HashParams))
}
