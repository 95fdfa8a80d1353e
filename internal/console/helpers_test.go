package console_test

import (
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/users"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

const password = "correct horse battery"

// person is a user who can sign in, with an API token for checking what
// the pages did.
type person struct {
	id           int64
	email, token string
}

// org is a tenant with an admin, a member and a viewer.
type org struct {
	*apitest.TenantEnv
	admin, member, viewer person
}

func newEnv(t testing.TB, opts ...apitest.Option) *apitest.Env {
	return apitest.New(t, append([]apitest.Option{apitest.WithConfig(func(c *config.Config) { c.WebhookAllowPrivate = true })}, opts...)...)
}

func newOrg(t testing.TB, env *apitest.Env, slug string) *org {
	t.Helper()
	te := env.Tenant(slug)
	us := users.NewStore(env.DB, users.WithHashParams(apitest.HashParams))
	o := &org{TenantEnv: te}
	for role, p := range map[string]*person{auth.RoleAdmin: &o.admin, auth.RoleMember: &o.member, auth.RoleViewer: &o.viewer} {
		u, err := us.Create(te.Ctx, role+"@"+slug+".example.com", "Test "+role, role, password)
		if err != nil {
			t.Fatal(err)
		}
		*p = person{id: u.ID, email: u.Email, token: te.Token(u.ID, auth.AllScopes...)}
	}
	return o
}

// webhook registers a webhook as p through the API.
func (o *org) webhook(t testing.TB, p person, target string) models.WebhookWithSecret {
	t.Helper()
	var wh models.WebhookWithSecret
	o.Do("POST", "/api/1.0/webhooks", p.token, map[string]any{"event": outbox.ActFetchData, "target": target}).
		Status(t, http.StatusCreated).Decode(t, &wh)
	return wh
}

func (o *org) deliveries(t testing.TB, id int64) []models.Delivery {
	t.Helper()
	var log struct {
		Data []models.Delivery `json:"data"`
	}
	o.Do("GET", "/api/1.0/webhooks/"+strconv.FormatInt(id, 10)+"/deliveries", o.admin.token, nil).Status(t, http.StatusOK).Decode(t, &log)
	return log.Data
}

// client is a browser without a browser: cookies, no redirects followed.
type client struct {
	t  testing.TB
	o  *org
	hc *http.Client
}

// foreignWebhook registers three webhooks in o and returns the last one's
// id. Ids are numbered per tenant, so the third lies past the ids the
// other tenant of a test holds: a 404 for it is the tenant check, not a
// missing id.
func (o *org) foreignWebhook(t testing.TB) int64 {
	t.Helper()
	var id int64
	for range 3 {
		id = o.webhook(t, o.admin, "https://127.0.0.1:9/other").Id
	}
	return id
}

func (o *org) client(t testing.TB) *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: t, o: o, hc: &http.Client{Jar: jar, Transport: &apitest.ValidatingTransport{T: t, Host: o.Host},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type resp struct {
	code     int
	location string
	body     string
	header   http.Header
}

func (c *client) do(method, path string, form url.Values) resp {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, c.o.Server.URL+path, body)
	req.Header.Set("Accept", "text/html")
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	r, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return resp{r.StatusCode, r.Header.Get("Location"), string(b), r.Header}
}

var csrfRE = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// csrf is the token of the page's last form (the first is sign-out's).
func csrf(t testing.TB, body string) string {
	t.Helper()
	ms := csrfRE.FindAllStringSubmatch(body, -1)
	if ms == nil {
		t.Fatalf("no form on the page: %s", body)
	}
	return html.UnescapeString(ms[len(ms)-1][1])
}

func (c *client) login(p person) {
	c.t.Helper()
	page := c.do("GET", "/login", nil)
	r := c.do("POST", "/login", url.Values{"csrf_token": {csrf(c.t, page.body)}, "email": {p.email}, "password": {password}, "next": {"/console/webhooks"}})
	if r.code != http.StatusSeeOther {
		c.t.Fatalf("login %s: %d", p.email, r.code)
	}
}

// post sends a console form with the CSRF token of the page at from.
func (c *client) post(from, action string) resp {
	c.t.Helper()
	page := c.do("GET", from, nil)
	return c.do("POST", action, url.Values{"csrf_token": {csrf(c.t, page.body)}})
}

var confirmRE = regexp.MustCompile(`(?s)<form method="post" action="([^"]+)" id="confirm-form">\s*<input type="hidden" name="csrf_token" value="([^"]+)">`)

// ask posts a destructive action's form from the page at from and returns
// the confirmation page; it fails unless one came.
func (c *client) ask(from, action string) (page resp, confirmToken string) {
	c.t.Helper()
	page = c.post(from, action)
	m := confirmRE.FindStringSubmatch(page.body)
	if page.code != http.StatusOK || m == nil || html.UnescapeString(m[1]) != action {
		c.t.Fatalf("POST %s: %d, no confirmation: %s", action, page.code, page.body)
	}
	return page, html.UnescapeString(m[2])
}

// confirm posts a destructive action and then its confirmation page's form.
func (c *client) confirm(from, action string) resp {
	c.t.Helper()
	_, tok := c.ask(from, action)
	return c.do("POST", action, url.Values{"csrf_token": {tok}})
}
