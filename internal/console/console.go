// Package console is the tenant console: server-rendered pages on the tenant
// host for signed-in users (webhooks and their deliveries, the fetch
// requests of an act, users). It translates forms to the same domain calls
// the JSON API makes (internal/webhooks/registry, internal/acts, internal/users), under
// the same operation policy (auth.Policy, the role half: a signed-in user
// acts with their role and no app's scopes), and decides nothing itself:
// visibility, ownership and every other rule stay in the domain.
//
// Sessions, CSRF tokens and the one-time display of secrets are internal/oauth's
// (the sign-in pages' machinery); the layout and the safety headers are
// internal/web's.
package console

import (
	"embed"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/internal/acts"
	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/mfa"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/textinput"
	"github.com/finsvc/finsvc/internal/users"
	"github.com/finsvc/finsvc/internal/web"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
)

//go:embed templates/*.html
var templateFS embed.FS

// Sessions is the sign-in machinery of internal/oauth the console uses.
type Sessions interface {
	CurrentUser(c echo.Context) (*users.User, error)
	FormToken(c echo.Context, purpose string) string
	CheckForm(c echo.Context, purpose string) bool
	LogoutToken(c echo.Context) string
	LoginRedirect(c echo.Context, next string) error
	// ConfirmPassword checks the password a signed-in user typed again,
	// throttled like a sign-in (apperr.Unauthenticated when wrong,
	// apperr.TooManyRequests over the budget).
	ConfirmPassword(c echo.Context, u *users.User, password string) error
	SetFlash(c echo.Context, userID int64, path string, v any) error
	TakeFlash(c echo.Context, userID int64, path string, v any) bool
	// The second factor (account.go, security.go): the session at any
	// stage, a factor just given (a new session id), and the step-up
	// before a sensitive action (false: the browser was sent to give it).
	SignIn(c echo.Context) (*web.SignIn, error)
	SecondFactorGiven(c echo.Context, method string) error
	RequireStepUp(c echo.Context, u *users.User, back string) (bool, error)
	// RelyingParty is the passkeys' relying party of the request's tenant.
	RelyingParty(c echo.Context) mfa.RelyingParty
}

// Deps are the services the console calls, built by internal/app.
type Deps struct {
	Sessions Sessions
	Webhooks *registry.Store
	Acts     *acts.Store
	Users    *users.Store
	MFA      *mfa.Store
	Audit    *audit.Log
	Logger   *slog.Logger
	// Policy is the operation policy the pages ask, the API's.
	Policy *auth.Policy
	// Apps names the apps that changed an act (optional: without it an
	// app is "a deleted app").
	Apps Apps
	// EventTypes describe the event kinds on the create form (optional).
	EventTypes []EventType
	// Nav is the whole navigation (Nav and the other pages' entries,
	// joined by internal/app); empty: the console's own.
	Nav web.Nav
}

// Nav is the console's part of the navigation, each entry with the
// operation whose role rule shows it.
var Nav = web.Nav{
	{Key: "webhooks", Label: "Webhooks", Path: "/console/webhooks"},
	{Key: "acts", Label: "Acts", Path: "/console/acts"},
	{Key: "users", Label: "Users", Path: "/console/users", Op: auth.OpListUsers},
	{Key: "audit", Label: "Audit log", Path: "/console/audit", Op: auth.OpListAuditLog},
	{Key: "security", Label: "Sign-in security", Path: securityPath, Op: auth.OpUpdateUser},
	{Key: "account-security", Label: "Second factor", Path: web.AccountPath},
}

// Console serves the console pages.
type Console struct {
	d     Deps
	pages *template.Template
}

// New parses the pages; it fails when a dependency is missing.
func New(d Deps) (*Console, error) {
	if d.Sessions == nil || d.Webhooks == nil || d.Acts == nil || d.Users == nil || d.MFA == nil || d.Logger == nil || d.Policy == nil {
		return nil, errors.New("console: every dependency is required (internal/app builds them)")
	}
	if len(d.Nav) == 0 {
		d.Nav = Nav
	}
	// Every operation a page asks about is an auth.Op, generated from the
	// spec whose policy this is (authspec.FromSpec checks both agree).
	t, err := web.Parse(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	return &Console{d: d, pages: t}, nil
}

// formPurpose is the CSRF purpose of every console form.
const formPurpose = "console"

// Routes registers the pages (an httpapi.Deps.Routes entry: tenant
// resolution has run before them).
func (cs *Console) Routes(e *echo.Echo) {
	h := cs.handle
	e.GET("/console", func(c echo.Context) error { return c.Redirect(http.StatusFound, web.Home) })
	e.GET("/console/webhooks", h(cs.webhooks))
	e.GET("/console/webhooks/new", h(cs.newWebhook))
	e.POST("/console/webhooks", h(cs.post(cs.createWebhook)))
	e.GET("/console/webhooks/:id", h(cs.webhook))
	e.POST("/console/webhooks/:id/target", h(cs.post(cs.changeTarget)))
	e.POST("/console/webhooks/:id/replay", h(cs.post(cs.replayFailed)))
	e.POST("/console/webhooks/:id/test", h(cs.post(cs.testWebhook)))
	e.POST("/console/webhooks/:id/rotate", h(cs.stepped(cs.confirmed(cs.askRotate, cs.rotateWebhook))))
	e.POST("/console/webhooks/:id/end-overlap", h(cs.post(cs.endOverlap))) // webhooks.go
	e.GET("/console/webhooks/:id/secret", h(cs.stepped(cs.secret)))
	e.POST("/console/webhooks/:id/secret", h(cs.post(cs.stepped(cs.revealSecret))))
	e.POST("/console/webhooks/:id/disable", h(cs.confirmed(cs.askDisable, cs.setActive(false))))
	e.POST("/console/webhooks/:id/enable", h(cs.post(cs.setActive(true))))
	e.POST("/console/webhooks/:id/delete", h(cs.confirmed(cs.askDelete, cs.deleteWebhook)))
	e.GET("/console/webhooks/:id/deliveries/:delivery", h(cs.delivery))
	e.POST("/console/webhooks/:id/deliveries/:delivery/redeliver", h(cs.post(cs.redeliver)))
	e.GET("/console/acts", h(cs.actsList))
	e.GET("/console/acts/:uuid", h(cs.act))
	e.GET("/console/users", h(cs.users))
	e.GET("/console/audit", h(cs.auditLog))
	e.POST("/console/users", h(cs.post(cs.createUser)))
	e.POST("/console/users/:id/role", h(cs.post(cs.stepped(cs.changeRole))))
	e.POST("/console/users/:id/deactivate", h(cs.confirmed(cs.askDeactivate, cs.deactivateUser)))
	e.POST("/console/users/:id/reactivate", h(cs.post(cs.reactivateUser)))
	e.POST("/console/users/:id/one-time-password", h(cs.post(cs.stepped(cs.issueOneTimePassword))))
	// The second factor: the account page (a sign-in the policy holds at
	// enrolment reaches its enrolment only), the policy, an admin's reset.
	en := cs.enrolling
	e.GET(web.AccountPath, en(cs.account))
	e.POST(web.AccountPath+"/totp", en(cs.post(cs.beginTOTP)))
	e.POST(web.AccountPath+"/totp/confirm", en(cs.post(cs.confirmTOTP)))
	e.POST(web.AccountPath+"/recovery", h(cs.post(cs.stepped(cs.regenerateRecovery))))
	e.POST(web.AccountPath+"/remove", h(cs.stepped(cs.confirmed(cs.askRemoveFactor, cs.removeFactor))))
	e.POST(web.AccountPath+"/passkeys/begin", en(cs.beginPasskey))
	e.POST(web.AccountPath+"/passkeys", en(cs.post(cs.addPasskey)))
	e.POST(web.AccountPath+"/passkeys/:n/rename", h(cs.post(cs.renamePasskey)))
	e.POST(web.AccountPath+"/passkeys/:n/remove", h(cs.stepped(cs.confirmed(cs.askRemovePasskey, cs.removePasskey))))
	e.GET(securityPath, h(cs.security))
	e.POST(securityPath, h(cs.post(cs.stepped(cs.setPolicy))))
	e.POST("/console/users/:id/reset-mfa", h(cs.stepped(cs.confirmed(cs.askResetMFA, cs.resetMFA))))
}

// req is one console request: the signed-in user as the principal the
// domain calls take.
type req struct {
	echo.Context
	user *users.User
	p    *auth.Principal
	pol  *auth.Policy
}

type handler func(r *req) error

// handle signs the request in (or sends the browser to the sign-in page)
// and turns domain errors into pages.
func (cs *Console) handle(h handler) echo.HandlerFunc {
	return func(c echo.Context) error {
		u, err := cs.d.Sessions.CurrentUser(c)
		if err != nil {
			return cs.fail(c, nil, err)
		}
		if u == nil {
			// Back to this page after signing in; a form posted without a
			// session is dropped, and its page is shown again instead.
			next := c.Request().URL.RequestURI()
			if c.Request().Method != http.MethodGet {
				next = formPage(c.Request())
			}
			return cs.d.Sessions.LoginRedirect(c, next)
		}
		if u.PasswordChangeRequired {
			// Signed in with a one-time password: choosing one comes first.
			next := c.Request().URL.RequestURI()
			if c.Request().Method != http.MethodGet {
				next = web.Home
			}
			return c.Redirect(http.StatusFound, web.PasswordPath+"?next="+url.QueryEscape(next))
		}
		if field, ok := badText(c); !ok {
			return cs.errorPage(c, u, http.StatusBadRequest, "Bad request", "The field "+field+" "+textinput.Message+".")
		}
		r := &req{Context: c, user: u, p: &auth.Principal{TenantID: tenant.ID(c.Request().Context()), UserID: u.ID, Role: u.Role}, pol: cs.d.Policy}
		// The stores see who acts (the audit log), as behind a bearer token.
		c.SetRequest(c.Request().WithContext(auth.NewContext(c.Request().Context(), r.p)))
		if err := h(r); err != nil {
			return cs.fail(c, u, err)
		}
		return nil
	}
}

// badText checks the request's query parameters and form fields against
// the rule every text input obeys (textinput), as the API's validator
// does, before a page hands one to a store: PostgreSQL refuses NUL and
// invalid UTF-8 where SQLite stores them, so both answer the same 400. It
// returns the first refused field's name, quoted, and false.
func badText(c echo.Context) (string, bool) {
	bad := textinput.BadValues(c.QueryParams())
	if c.Request().Method == http.MethodPost {
		if form, err := c.FormParams(); err == nil {
			bad = append(bad, textinput.BadValues(form)...)
		}
	}
	if len(bad) == 0 {
		return "", true
	}
	return strconv.Quote(bad[0]), false
}

// formPage is the console page a form was posted from (its Referer on
// this host, under /console/), or the console's home.
func formPage(r *http.Request) string {
	ref, err := url.Parse(r.Header.Get("Referer"))
	if err != nil || ref.Host != r.Host || !strings.HasPrefix(ref.Path, "/console/") || strings.ContainsAny(ref.Path, "\\\r\n") {
		return web.Home
	}
	return ref.RequestURI()
}

// post checks the form's CSRF token before h.
func (cs *Console) post(h handler) handler {
	return func(r *req) error {
		if !cs.d.Sessions.CheckForm(r.Context, formPurpose) {
			return cs.expired(r)
		}
		return h(r)
	}
}

// permit is the policy's role rule for operationID, an API operation.
func (r *req) permit(operationID auth.Op) bool { return r.pol.Allows(r.p, operationID) }

// fail answers a domain error with a page: another tenant's or an invisible
// id is a 404, a refused role a 403, an outage a 503; anything else is
// logged and a 500.
func (cs *Console) fail(c echo.Context, u *users.User, err error) error {
	switch {
	case db.IsUnavailable(err):
		c.Response().Header().Set("Retry-After", "5")
		return cs.errorPage(c, u, http.StatusServiceUnavailable, "Service unavailable", "The service is temporarily unavailable. Try again in a few moments.")
	case apperr.Is(err, apperr.NotFound):
		return cs.errorPage(c, u, http.StatusNotFound, "Not found", "There is nothing here, or you cannot see it.")
	case apperr.Is(err, apperr.Forbidden):
		d := web.Forbidden(err)
		return cs.errorPage(c, u, http.StatusForbidden, d.Title, d.Message)
	}
	cs.d.Logger.ErrorContext(c.Request().Context(), "console: request failed", "path", c.Path(), "error", err)
	return cs.errorPage(c, u, http.StatusInternalServerError, "Something went wrong", "The page could not be shown. Try again later.")
}

func (cs *Console) errorPage(c echo.Context, u *users.User, status int, title, msg string) error {
	return cs.render(c, status, "error", &view{Layout: web.Layout{Title: title, User: u, Message: msg}})
}

// view is the layout's data (internal/web) plus each page's own.
type view struct {
	web.Layout
	Notice string
	CSRF   string
	Secret string
	Page   any
}

func (cs *Console) render(c echo.Context, status int, name string, v *view) error {
	v.Tenant = tenant.MustFromContext(c.Request().Context()).Slug
	if v.User != nil {
		v.LogoutCSRF = cs.d.Sessions.LogoutToken(c)
		v.Menu = cs.d.Nav.Menu(cs.d.Policy, v.User)
		v.CSRF = cs.d.Sessions.FormToken(c, formPurpose)
	}
	return web.Render(c, cs.pages, status, name, v)
}

// flash is what a POST leaves for the page it redirects to.
type flash struct {
	Notice string `json:"n,omitempty"`
	Secret string `json:"s,omitempty"`
	// Revealed are the secrets a reveal shows (secret.go).
	Revealed *revealed `json:"r,omitempty"`
}

// done redirects to path with a notice (and a secret shown once), so that
// a reload repeats nothing (POST-redirect-GET).
func (cs *Console) done(r *req, path string, f flash) error {
	if err := cs.d.Sessions.SetFlash(r.Context, r.user.ID, path, f); err != nil {
		return err
	}
	return r.Redirect(http.StatusSeeOther, path)
}

// show renders a GET page, with what the POST before it left.
func (cs *Console) show(r *req, name string, v *view) error {
	var f flash
	if cs.d.Sessions.TakeFlash(r.Context, r.user.ID, r.Request().URL.Path, &f) {
		v.Notice, v.Secret = f.Notice, f.Secret
	}
	v.User = r.user
	status := http.StatusOK
	if v.Message != "" {
		status = http.StatusBadRequest
	}
	return cs.render(r.Context, status, name, v)
}

// pageRequest reads ?page= (25 rows a page); a bad number is page 1.
func pageRequest(c echo.Context) page.Request {
	n, err := strconv.Atoi(c.QueryParam("page"))
	if err != nil || n < 1 || n > 1_000_000 {
		n = 1
	}
	return page.Request{Page: n, Limit: page.DefaultLimit}
}

// pager is the previous/next navigation of a list.
type pager struct {
	Page, Prev, Next int
	Total            int64
}

func newPager(pg page.Request, total int64) pager {
	p := pager{Page: pg.Page, Total: total}
	if pg.Page > 1 {
		p.Prev = pg.Page - 1
	}
	if int64(pg.Page*pg.Limit) < total {
		p.Next = pg.Page + 1
	}
	return p
}

// idParam is a positive integer path parameter; anything else is no such
// resource.
func idParam(c echo.Context, name string) (int64, error) {
	id, err := strconv.ParseInt(c.Param(name), 10, 64)
	if err != nil || id < 1 {
		return 0, apperr.E(apperr.NotFound, "not found")
	}
	return id, nil
}

// describe is a refusal in sentences for a banner (web.Describe).
func describe(err error) string { return web.Describe(err) }
