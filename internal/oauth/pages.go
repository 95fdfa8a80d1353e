package oauth

import (
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/clientaddr"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/oauth/store"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/textinput"
	"github.com/finsvc/finsvc/internal/users"
	"github.com/finsvc/finsvc/internal/web"
)

//go:embed templates/*.html
var templateFS embed.FS

func parsePages() (*template.Template, error) {
	t, err := web.Parse(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("oauth: parse page templates: %w", err)
	}
	return t, nil
}

// Routes registers the OAuth endpoints and pages; wire it as an
// httpapi.Deps.Routes entry (tenant resolution has run before them).
func (s *Service) Routes(e *echo.Echo) {
	// The token and revoke endpoints answer outages themselves, in the
	// RFC 6749 format (writeFositeError).
	e.POST("/api/oauth/token", s.limited(s.handleToken))
	e.POST("/api/oauth/revoke", s.limited(s.handleRevoke))
	page := s.pageErrors
	e.GET("/oauth/authorize", page(s.handleAuthorize))
	e.POST("/oauth/authorize", page(s.handleConsent))
	e.GET("/login", page(s.handleLoginPage))
	e.POST("/login", page(s.handleLogin))
	e.POST("/logout", page(s.handleLogout))
	e.GET(web.FactorPath, page(s.handleFactorPage))
	e.POST(web.FactorPath, page(s.handleFactor))
	e.GET(web.StepUpPath, page(s.handleStepUpPage))
	e.POST(web.StepUpPath, page(s.handleStepUp))
	e.POST(web.FactorPath+passkeyBeginSuffix, page(s.handlePasskeyBegin))
	e.POST(web.FactorPath+"/passkey", page(s.handlePasskey))
	e.POST(web.StepUpPath+passkeyBeginSuffix, page(s.handleStepUpPasskeyBegin))
	e.POST(web.StepUpPath+"/passkey", page(s.handleStepUpPasskey))
	e.GET("/developer/my-apps", page(s.handleApps))
	e.POST("/developer/my-apps", page(s.handleCreateApp))
	e.POST("/developer/my-apps/:id/rotate", page(s.handleRotateApp))
	e.POST("/developer/my-apps/:id/end-overlap", page(s.handleEndOverlap))
	e.POST("/developer/my-apps/:id/delete", page(s.handleDeleteApp))
	e.GET("/account/apps", page(s.handleAccount))
	e.GET(web.PasswordPath, page(s.handlePasswordPage))
	e.POST(web.PasswordPath, page(s.handleChangePassword))
	e.GET("/", s.handleRoot)
	e.POST("/account/apps/:id/revoke", page(s.handleRevokeApp))
}

// retryAfterUnavailable is the Retry-After, in seconds, of the answers
// given while the database cannot be reached.
const retryAfterUnavailable = "5"

// pageErrors turns a database outage met by a page handler into the
// "service unavailable" page, instead of the JSON 500 of the server's
// error handler.
func (s *Service) pageErrors(h echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := h(c)
		if err != nil && db.IsUnavailable(err) && !c.Response().Committed {
			return s.unavailablePage(c, err)
		}
		return err
	}
}

// tooManyPage answers 429 (Retry-After is set by the budget) with a page
// that says so: the authorization pages are for browsers.
func (s *Service) tooManyPage(c echo.Context) error {
	return s.errorPage(c, http.StatusTooManyRequests, "Too many requests",
		"Too many requests came from your network. Wait a moment and try again.")
}

// unavailablePage answers 503 with Retry-After and a page that says so.
func (s *Service) unavailablePage(c echo.Context, err error) error {
	s.logUnavailable(c.Request(), err)
	c.Response().Header().Set("Retry-After", retryAfterUnavailable)
	return s.errorPage(c, http.StatusServiceUnavailable, "Service unavailable",
		"The service is temporarily unavailable. Try again in a few moments.")
}

// page is the data of every page: the layout's (internal/web) and its own.
type page struct {
	web.Layout
	CSRF string

	// login
	Next, Email string
	// consent
	AppName string
	Scopes  []scopeItem
	Params  []param
	// developer apps
	Apps      []store.Client
	AllScopes []scopeItem
	Created   *createdApp
	Overlaps  []overlapChoice
	Now       time.Time
	// account
	Authorized []store.AuthorizedApp
	// password
	Password *passwordPage
	// the second factor's code form (factor.go)
	Factor *factorPage
	// a destructive action's question (askFirst), and what the last one did
	Notice string
}

type param struct{ Name, Value string }

// createdApp is the secret a registration or rotation shows once; after a
// rotation, PreviousUntil is when the replaced secret stops working (nil:
// it already has).
type createdApp struct {
	Name, ClientID, Secret string
	Rotated                bool
	PreviousUntil          *time.Time
	// Notice, alone, says what a deletion did.
	Notice string
}

// overlapChoice is an option of the rotation form's window.
type overlapChoice struct {
	Value, Label string
	Default      bool
}

// overlapChoices are the rotation windows the developer page offers
// (ParseOverlap reads them).
var overlapChoices = []overlapChoice{
	{"now", "now (the old secret leaked)", false},
	{"1h", "1 hour", false},
	{"24h", "24 hours", true},
	{"168h", "7 days", false},
}

func (s *Service) render(c echo.Context, status int, name string, p *page) error {
	ctx := c.Request().Context()
	p.Tenant = tenant.MustFromContext(ctx).Slug
	if p.User != nil {
		p.LogoutCSRF = s.csrfToken(ctx, s.csrfSeed(c), "logout", "")
		p.Menu = s.nav.Menu(s.policy, p.User)
	}
	// web.Render refuses framing (no clickjacking of the consent page).
	return web.Render(c, s.pages, status, name, p)
}

// handleRoot is GET / on a tenant host: browsers go to the console (or
// the sign-in page on the way); API clients keep the JSON 404.
func (s *Service) handleRoot(c echo.Context) error {
	if !web.WantsHTML(c.Request()) {
		return echo.ErrNotFound
	}
	return c.Redirect(http.StatusFound, web.Home)
}

func (s *Service) errorPage(c echo.Context, status int, title, msg string) error {
	return s.render(c, status, "error", &page{Layout: web.Layout{Title: title, Message: msg}})
}

// safeNextOr keeps post-login redirects on this host: next when it is a
// local absolute path, else fallback.
func safeNextOr(next, fallback string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return fallback
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" {
		return fallback
	}
	return next
}

// landing is where a signed-in user goes when no page asked for them: the
// console for those the policy lets work there (change a webhook: admins
// and members), the apps they authorized for the others.
func (s *Service) landing(u *users.User) string {
	p := &auth.Principal{TenantID: u.TenantID, UserID: u.ID, Role: u.Role}
	if s.policy.Allows(p, opConsoleWork) {
		return web.Home
	}
	return "/account/apps"
}

// LoginRedirect sends a browser without a valid session to the sign-in
// page, which returns it to next (a page to GET: a form whose session had
// expired is not sent again, its page is shown). When the browser had a
// session that is no longer valid (it expired, or was ended elsewhere),
// the sign-in page says so.
func (s *Service) LoginRedirect(c echo.Context, next string) error {
	// A sign-in half done goes on where it stopped (factor.go).
	if half, err := s.halfRedirect(c, next); half || err != nil {
		return err
	}
	q := url.Values{"next": {next}}
	if ck, err := c.Cookie(sessionCookie); err == nil && ck.Value != "" {
		q.Set("expired", "1")
		s.setCookie(c, sessionCookie, "", -1)
	}
	status := http.StatusFound
	if c.Request().Method != http.MethodGet && c.Request().Method != http.MethodHead {
		status = http.StatusSeeOther
	}
	return c.Redirect(status, "/login?"+q.Encode())
}

// msgSessionExpired is the sign-in page's message after LoginRedirect found
// a session that was no longer valid.
const msgSessionExpired = "Your session expired; sign in again."

func (s *Service) handleLoginPage(c echo.Context) error {
	u, err := s.currentUser(c)
	if err != nil {
		return err
	}
	next := safeNextOr(c.QueryParam("next"), "")
	if u != nil {
		if next == "" {
			next = s.landing(u)
		}
		return c.Redirect(http.StatusSeeOther, next)
	}
	ctx := c.Request().Context()
	msg, notice := "", ""
	if c.QueryParam("expired") == "1" {
		msg = msgSessionExpired
	}
	if c.QueryParam("signed_out") == "1" {
		notice = "You are signed out."
	}
	return s.render(c, http.StatusOK, "login", &page{
		Layout: web.Layout{Title: "Sign in", Message: msg},
		Notice: notice,
		Next:   next,
		CSRF:   s.csrfToken(ctx, s.csrfSeed(c), "login", ""),
	})
}

func (s *Service) handleLogin(c echo.Context) error {
	ctx := c.Request().Context()
	next := safeNextOr(c.Request().PostFormValue("next"), "")
	if !s.checkCSRF(c, "login", "") {
		return s.errorPage(c, http.StatusForbidden, "Session expired", "The form expired or was not sent by this site. Go back, reload the page and try again.")
	}
	email := c.Request().PostFormValue("email")
	if bad := textinput.BadValues(c.Request().PostForm); len(bad) > 0 {
		// Refused before the user lookup, which PostgreSQL would fail on.
		if !textinput.Valid(email) {
			email = ""
		}
		return s.render(c, http.StatusBadRequest, "login", &page{
			Layout: web.Layout{Title: "Sign in", Message: fieldLabel(bad[0]) + " " + textinput.Message + "."},
			Next:   next,
			Email:  email,
			CSRF:   s.csrfToken(ctx, s.csrfSeed(c), "login", ""),
		})
	}
	done, wait, ok := s.logins.begin(tenant.ID(ctx), email, clientaddr.From(c.Request(), s.cfg.TrustProxy))
	if !ok {
		// The email stays out of the log (personal data); the tenant and
		// request id are on the access log line.
		s.log.Warn("login throttled", "tenant", tenant.ID(ctx), "retry_after", wait.Round(time.Second))
		c.Response().Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
		return s.render(c, http.StatusTooManyRequests, "login", &page{
			Layout: web.Layout{Title: "Sign in", Message: "Too many sign-in attempts. Try again later."},
			Next:   next,
			Email:  email,
			CSRF:   s.csrfToken(ctx, s.csrfSeed(c), "login", ""),
		})
	}
	// The slot is given back even if the check panics.
	failed, succeeded := false, false
	defer func() { done(failed, succeeded) }()
	u, err := s.users.Authenticate(ctx, email, c.Request().PostFormValue("password"))
	failed, succeeded = apperr.Is(err, apperr.Unauthenticated), err == nil
	if apperr.Is(err, apperr.Unauthenticated) {
		return s.render(c, http.StatusUnauthorized, "login", &page{
			Layout: web.Layout{Title: "Sign in", Message: "Invalid email or password."},
			Next:   next,
			Email:  email,
			CSRF:   s.csrfToken(ctx, s.csrfSeed(c), "login", ""),
		})
	}
	if err != nil {
		return err
	}
	// A one-time password: choosing one comes before anything else
	// (signedIn), after the second factor (factor.go).
	signedIn, err := s.afterPassword(c, u, next)
	succeeded = signedIn && err == nil
	return err
}

func (s *Service) handleLogout(c echo.Context) error {
	if !s.checkCSRF(c, "logout", "") {
		return s.errorPage(c, http.StatusForbidden, "Session expired", "The form expired or was not sent by this site.")
	}
	if err := s.endSession(c); err != nil {
		return err
	}
	// The sign-in page says so (it is shown only to a browser without a
	// session, so the words are true whoever follows the link).
	return c.Redirect(http.StatusSeeOther, "/login?signed_out=1")
}

// requireUser returns the signed-in user, or writes a redirect to the
// login page (returning nil user).
func (s *Service) requireUser(c echo.Context, back string) (*users.User, error) {
	u, err := s.currentUser(c)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, s.LoginRedirect(c, back)
	}
	if u.PasswordChangeRequired {
		return nil, passwordRedirect(c, back)
	}
	return u, nil
}

// requireAdmin is requireUser plus what the operation policy asks of a
// user managing apps (x-finsvc-pages' manageApps in the spec).
func (s *Service) requireAdmin(c echo.Context) (*users.User, bool, error) {
	u, err := s.requireUser(c, "/developer/my-apps")
	if u == nil || err != nil {
		return nil, false, err
	}
	p := &auth.Principal{TenantID: u.TenantID, UserID: u.ID, Role: u.Role}
	if err := s.policy.PermitRole(p, auth.PageManageApps); err != nil {
		d := web.Forbidden(err)
		return u, false, s.errorPage(c, http.StatusForbidden, d.Title, d.Message)
	}
	return u, true, nil
}

func (s *Service) appsPage(c echo.Context, u *users.User, status int, msg string, created *createdApp) error {
	ctx := c.Request().Context()
	apps, err := ListApps(ctx, s.db)
	if err != nil {
		return err
	}
	p := &page{
		Layout:    web.Layout{Title: "Developer apps", Nav: "developer", User: u, Message: msg},
		Apps:      apps,
		AllScopes: describeScopes(auth.AllScopes),
		Created:   created,
		Overlaps:  overlapChoices,
		Now:       s.now(),
		CSRF:      s.csrfToken(ctx, s.csrfSeed(c), "developer", ""),
	}
	if created != nil && created.Secret == "" {
		// A deletion's flash: its notice alone.
		p.Created, p.Notice = nil, created.Notice
	}
	return s.render(c, status, "apps", p)
}

func (s *Service) handleApps(c echo.Context) error {
	u, ok, err := s.requireAdmin(c)
	if !ok || err != nil {
		return err
	}
	var created *createdApp
	if !s.TakeFlash(c, u.ID, appsPath, &created) {
		created = nil
	}
	return s.appsPage(c, u, http.StatusOK, "", created)
}

// appsPath is the developer apps page, where a new secret is shown once.
const appsPath = "/developer/my-apps"

// showSecret redirects to the apps page, which shows the secret once
// (POST-redirect-GET: reloading it registers or rotates nothing).
func (s *Service) showSecret(c echo.Context, u *users.User, created *createdApp) error {
	if err := s.SetFlash(c, u.ID, appsPath, created); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, appsPath)
}

func (s *Service) handleCreateApp(c echo.Context) error {
	u, ok, err := s.requireAdmin(c)
	if !ok || err != nil {
		return err
	}
	if !s.checkCSRF(c, "developer", "") {
		return s.errorPage(c, http.StatusForbidden, "Session expired", "The form expired or was not sent by this site.")
	}
	if fresh, err := s.RequireStepUp(c, u, appsPath); !fresh || err != nil {
		return err
	}
	// The body's fields only: a value in the URL would land in logs and
	// the browser's history.
	_ = c.Request().ParseForm()
	form := c.Request().PostForm
	name := form.Get("name")
	uris := strings.Split(strings.ReplaceAll(form.Get("redirect_uris"), "\r", ""), "\n")
	if len(form["scopes"]) == 0 {
		// ValidateApp gives a scope-less app every scope (the CLI's
		// default); the form asks for a choice instead, besides what
		// ValidateApp finds wrong with the rest.
		msg := "Check at least one scope."
		if _, _, _, err := ValidateApp(name, uris, nil); apperr.Is(err, apperr.Invalid) {
			msg = describe(err) + " " + msg
		}
		return s.appsPage(c, u, http.StatusBadRequest, msg, nil)
	}
	id, secret, err := CreateAppCtx(c.Request().Context(), s.db, &u.ID, name, uris, form["scopes"])
	if apperr.Is(err, apperr.Invalid) {
		return s.appsPage(c, u, http.StatusBadRequest, describe(err), nil)
	}
	if err != nil {
		return err
	}
	return s.showSecret(c, u, &createdApp{Name: strings.TrimSpace(name), ClientID: id, Secret: secret})
}

func (s *Service) handleRotateApp(c echo.Context) error {
	u, ok, err := s.requireAdmin(c)
	if !ok || err != nil {
		return err
	}
	if !s.checkCSRF(c, "developer", "") {
		return s.errorPage(c, http.StatusForbidden, "Session expired", "The form expired or was not sent by this site.")
	}
	if fresh, err := s.RequireStepUp(c, u, appsPath); !fresh || err != nil {
		return err
	}
	ctx := c.Request().Context()
	id, ok := appID(c)
	if !ok {
		return s.appsPage(c, u, http.StatusNotFound, "App not found.", nil)
	}
	app, err := s.store.Client(ctx, id)
	if err != nil {
		return s.appsPage(c, u, http.StatusNotFound, "App not found.", nil)
	}
	overlap, err := ParseOverlap(c.Request().PostFormValue("overlap"))
	if err != nil {
		return s.appsPage(c, u, http.StatusBadRequest, describe(err), nil)
	}
	secret, until, err := RotateSecret(ctx, s.db, audit.UserActor(u.ID), id, overlap)
	if err != nil {
		return err
	}
	return s.showSecret(c, u, &createdApp{Name: app.Name, ClientID: id, Secret: secret, Rotated: true, PreviousUntil: until})
}

// handleEndOverlap is "End overlap now": the previous secret of a rotation
// stops working at once.
func (s *Service) handleEndOverlap(c echo.Context) error {
	u, ok, err := s.requireAdmin(c)
	if !ok || err != nil {
		return err
	}
	if !s.checkCSRF(c, "developer", "") {
		return s.errorPage(c, http.StatusForbidden, "Session expired", "The form expired or was not sent by this site.")
	}
	id, ok := appID(c)
	if !ok {
		return s.appsPage(c, u, http.StatusNotFound, "App not found.", nil)
	}
	err = EndSecretOverlap(c.Request().Context(), s.db, audit.UserActor(u.ID), id)
	if apperr.Is(err, apperr.NotFound) {
		return s.appsPage(c, u, http.StatusNotFound, "App not found.", nil)
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, appsPath)
}

func (s *Service) handleDeleteApp(c echo.Context) error {
	u, ok, err := s.requireAdmin(c)
	if !ok || err != nil {
		return err
	}
	ctx := c.Request().Context()
	id, ok := appID(c)
	var app *store.Client
	if ok {
		if app, err = s.store.Client(ctx, id); err != nil {
			app = nil
		}
	}
	if app == nil {
		return s.appsPage(c, u, http.StatusNotFound, "App not found.", nil)
	}
	act, err := s.askFirst(c, u, "developer", func() (*web.Confirmation, error) {
		return &web.Confirmation{Danger: true,
			Title: "Delete the app " + app.Name + "?", Button: "Delete " + app.Name, Cancel: appsPath,
			Effects: []string{
				"Its client id " + app.ID + " and its secrets stop working now.",
				"Every access and refresh token it holds, for every user, is revoked; the users' authorizations of it are removed.",
				"This cannot be undone: to use the app again, register it anew and deploy the new client id and secret.",
			},
		}, nil
	})
	if !act || err != nil {
		return err
	}
	if err := DeleteApp(ctx, s.db, audit.UserActor(u.ID), id); err != nil && !apperr.Is(err, apperr.NotFound) {
		return err
	}
	if err := s.SetFlash(c, u.ID, appsPath, &createdApp{Notice: "The app " + app.Name + " was deleted; its tokens no longer work."}); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, appsPath)
}

func (s *Service) handleAccount(c echo.Context) error {
	u, err := s.requireUser(c, "/account/apps")
	if u == nil || err != nil {
		return err
	}
	ctx := c.Request().Context()
	apps, err := s.store.AuthorizedApps(ctx, u.ID)
	if err != nil {
		return err
	}
	var f notice
	s.TakeFlash(c, u.ID, "/account/apps", &f)
	return s.render(c, http.StatusOK, "account", &page{
		Layout:     web.Layout{Title: "Authorized apps", Nav: "account", User: u},
		Notice:     f.Notice,
		Authorized: apps,
		CSRF:       s.csrfToken(ctx, s.csrfSeed(c), "account", ""),
	})
}

func (s *Service) handleRevokeApp(c echo.Context) error {
	u, err := s.requireUser(c, "/account/apps")
	if u == nil || err != nil {
		return err
	}
	ctx := c.Request().Context()
	id, ok := appID(c)
	if !ok {
		// No app has such an id: nothing to revoke, nothing to ask.
		return c.Redirect(http.StatusSeeOther, "/account/apps")
	}
	name := id
	if app, err := s.store.Client(ctx, id); err == nil {
		name = app.Name
	}
	act, err := s.askFirst(c, u, "account", func() (*web.Confirmation, error) {
		return &web.Confirmation{Danger: true,
			Title: "Revoke the access of " + name + "?", Button: "Revoke access", Cancel: "/account/apps",
			Effects: []string{
				name + " can no longer act on your behalf: its access and refresh tokens for you are revoked now.",
				"It can ask for access again; you would see the consent page.",
			},
		}, nil
	})
	if !act || err != nil {
		return err
	}
	if err := s.store.RevokeUserApp(ctx, u.ID, id); err != nil {
		return err
	}
	if err := s.SetFlash(c, u.ID, "/account/apps", &notice{Notice: name + " no longer has access to your account."}); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/account/apps")
}

// appID is the app id in the path; false when it breaks the text rule
// (textinput): no app has such an id, and PostgreSQL would refuse to look.
func appID(c echo.Context) (string, bool) {
	id := c.Param("id")
	return id, textinput.Valid(id)
}

// fieldLabel names a form field for a message.
func fieldLabel(name string) string {
	switch name {
	case "email":
		return "Email"
	case "password":
		return "Password"
	}
	return fmt.Sprintf("The field %q", name)
}

// describe is a refusal in sentences for a page (web.Describe), naming
// the forms' fields as the pages label them.
func describe(err error) string { return web.DescribeLabelled(err, fieldLabels) }

var fieldLabels = map[string]string{
	"name": "The name", "redirect_uris": "Redirect URIs", "scopes": "Scopes", "overlap": "The overlap",
	"current_password": "The password you typed as current", "password": "The new password",
}
