// Package web is the look and the safety headers of every server-rendered
// page (the sign-in and app pages of internal/oauth, the console of internal/console,
// the HTML error pages of internal/httpapi): one layout, one stylesheet served
// by the binary, and the headers that refuse framing and outside content.
//
// A page template is parsed together with the layout (Parse) and uses
// {{template "head" .}} … {{template "foot"}}. The data of every page has
// the fields the layout reads, by embedding Layout.
package web

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/users"
)

//go:embed static/console.css static/copy.js static/passkey.js templates/layout.html
var files embed.FS

// StylePath is where the stylesheet is served. It answers on any host
// (httpapi treats /assets/ as operational), so that the error page of an
// unknown host is styled too.
const StylePath = "/assets/console.css"

// CopyScriptPath is the one script of the pages: the Copy button beside a
// secret a page shows (progressive enhancement: without it the field's
// text is selectable, and the button stays hidden). Only a page whose
// Layout.Script is set loads it, and only such a page's policy allows a
// script (SetHeaders, Render).
const CopyScriptPath = "/assets/copy.js"

// PasskeyScriptPath is the passkeys' script: WebAuthn is JavaScript
// (navigator.credentials), so a form marked data-passkey is hidden until
// it runs. Only a page whose Layout.Passkey is set loads it (and is
// allowed this site's scripts).
const PasskeyScriptPath = "/assets/passkey.js"

// Home is where the brand link and a browser at the tenant root go.
const Home = "/console/webhooks"

// PasswordPath is the password page (internal/oauth): a signed-in user changes
// their password there, and one who signed in with a one-time password is
// sent there by every page until they have chosen one.
const PasswordPath = "/account/password"

// The second factor's pages. FactorPath (internal/oauth) asks for the
// second factor after the password; StepUpPath (internal/oauth) asks for
// it again before a sensitive action when the last one is older than a
// few minutes; AccountPath (internal/console) is where a user enrols one,
// and where the tenant's policy sends a user who must.
const (
	FactorPath  = "/login/factor"
	StepUpPath  = "/login/confirm"
	AccountPath = "/console/account"
)

// SignIn is a browser's session as the pages see it: its user, how far
// the sign-in went (Stage: "" signed in, StageEnrol made to enrol a second
// factor first), the factors it used (AMR: "pwd", "otp", "recovery") and
// when the last second factor was given.
type SignIn struct {
	User     *users.User
	Stage    string
	AMR      []string
	FactorAt *time.Time
}

// StageEnrol is the stage of a sign-in the tenant's policy holds at
// enrolment.
const StageEnrol = "enrol"

var style, copyScript, passkeyScript = asset("static/console.css"), asset("static/copy.js"), asset("static/passkey.js")

func asset(name string) []byte {
	b, err := files.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return b
}

// NavItem is an entry of the main navigation. Op is the operation (or
// page) of the policy whose role rule shows it (the zero Op for every
// signed-in user).
type NavItem struct {
	Key, Label, Path string
	Op               auth.Op
}

// Nav is the whole navigation, in order. Each adapter declares its entries
// beside its routes (console.Nav, oauth.Nav) and the composition root joins
// them, so that a new page adds its entry where its route is.
type Nav []NavItem

// Menu is the navigation u sees under pol (Layout.Menu). Pages still ask
// the policy themselves; hiding a link is a convenience, not the rule.
func (n Nav) Menu(pol *auth.Policy, u *users.User) []NavItem {
	if u == nil {
		return nil
	}
	p := &auth.Principal{TenantID: u.TenantID, UserID: u.ID, Role: u.Role}
	var out []NavItem
	for _, it := range n {
		if it.Op.IsZero() || (pol != nil && pol.Allows(p, it.Op)) {
			out = append(out, it)
		}
	}
	return out
}

var funcs = template.FuncMap{
	"stylePath":     func() string { return StylePath },
	"copyScript":    func() string { return CopyScriptPath },
	"passkeyScript": func() string { return PasskeyScriptPath },
}

// Parse parses the layout and then the page templates of pages matching
// patterns (a page may use the layout's "head", "foot", "message" and
// "error").
func Parse(pages fs.FS, patterns ...string) (*template.Template, error) {
	t, err := template.New("layout").Funcs(funcs).ParseFS(files, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("web: parse layout: %w", err)
	}
	if pages != nil {
		if t, err = t.ParseFS(pages, patterns...); err != nil {
			return nil, fmt.Errorf("web: parse pages: %w", err)
		}
	}
	return t, nil
}

// SetHeaders sets what every page answers with: never cached (pages show
// secrets), never framed (no clickjacking of a button), no script (Render
// allows this site's on a page that loads CopyScriptPath), no outside
// content, no referrer leaving the site.
func SetHeaders(h http.Header) {
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", pagePolicy)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
}

// The pages' Content-Security-Policy: no script, no outside content;
// scriptPolicy adds this site's scripts, for a page that loads
// CopyScriptPath (an inline script stays refused); passkeyPolicy also
// lets the passkey script fetch its ceremony's options from this site.
const (
	pagePolicy    = "default-src 'none'; " + policyRest
	scriptPolicy  = "default-src 'none'; script-src 'self'; " + policyRest
	passkeyPolicy = "default-src 'none'; script-src 'self'; connect-src 'self'; " + policyRest
	policyRest    = "style-src 'self'; img-src 'self' data:; base-uri 'none'; frame-ancestors 'none'"
)

// Render executes the page template name with data into a buffer (a
// template error never sends half a page) and writes it. A page whose
// data asks for the script (Layout.Script) is allowed this site's scripts.
func Render(c echo.Context, t *template.Template, status int, name string, data any) error {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		return fmt.Errorf("web: render %s: %w", name, err)
	}
	SetHeaders(c.Response().Header())
	if s, ok := data.(interface{ Scripted() bool }); ok && s.Scripted() {
		c.Response().Header().Set("Content-Security-Policy", scriptPolicy)
	}
	if s, ok := data.(interface{ Connects() bool }); ok && s.Connects() {
		c.Response().Header().Set("Content-Security-Policy", passkeyPolicy)
	}
	return c.HTMLBlob(status, buf.Bytes())
}

// WantsHTML reports whether the client asked for a page: its Accept
// names text/html (browsers do; API clients and curl's default do not).
func WantsHTML(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/html" {
			return true
		}
	}
	return false
}

// Layout is what the layout reads from every page's data: page packages
// embed it in their own data types, so that the layout's fields have one
// definition. It is also the whole data of the "error" page.
type Layout struct {
	Title      string
	Tenant     string
	User       *users.User // nil when signed out
	LogoutCSRF string
	Nav        string    // the navigation key of the current page
	Menu       []NavItem // the navigation the user sees (Menu)
	Message    string    // an error banner
	Details    string
	Confirm    *Confirmation // the "confirm" page's question
	// Script loads CopyScriptPath: the page shows a secret with a Copy
	// button.
	Script bool
	// Passkey loads PasskeyScriptPath: the page has a passkey form.
	Passkey bool
	// Home and HomeLabel are the error page's way on ("/" and "Go to the
	// start page" when empty): a host that serves no organization has no
	// start page of its own.
	Home, HomeLabel string
}

// Scripted reports whether the page loads the script (Render allows it).
func (l Layout) Scripted() bool { return l.Script || l.Passkey }

// Connects reports whether the page's script fetches from this site (the
// passkey script: Render allows it).
func (l Layout) Connects() bool { return l.Passkey }

// Destructive actions ask first, without JavaScript, in the console and on
// the developer and account pages alike: the page's form gets an answer
// naming what will happen (the "confirm" page), and only that page's form
// acts, its CSRF token being bound to the action's path (ConfirmPurpose),
// which no other form carries. Reloading the confirmation repeats nothing
// (it answered a POST that changed nothing), and going back leaves
// everything as it was.

// Confirmation is what the confirmation page says and where its form posts.
type Confirmation struct {
	Title   string   // the question, e.g. "Delete webhook 5?"
	Effects []string // one sentence per consequence
	Button  string   // the acting button's label
	Cancel  string   // where "Cancel" leads
	Danger  bool     // the button is red
	Action  string   // the path the form posts to (the action's own)
	Token   string   // the CSRF token of ConfirmPurpose(Action)
	// Choice, when set, is a choice the action takes (radio buttons sent
	// with the confirmation's form).
	Choice *ChoiceGroup
}

// ChoiceGroup is a set of radio buttons on a confirmation page, each with
// the sentence of what choosing it does.
type ChoiceGroup struct {
	Name    string // the form field
	Legend  string // the question
	Options []Choice
}

// Choice is one option of a ChoiceGroup.
type Choice struct {
	Value, Label string
	Effect       string // what happens when it is chosen, one sentence
	Checked      bool
}

// ConfirmPurpose is the CSRF purpose of the confirmation form of the action
// at path.
func ConfirmPurpose(path string) string { return "confirm " + path }

var layout = func() *template.Template {
	t, err := Parse(nil)
	if err != nil {
		panic(err)
	}
	return t
}()

// WriteError writes the error page with status to w (for handlers outside
// a page package, such as httpapi's error handler).
func WriteError(w http.ResponseWriter, status int, d Layout) error {
	var buf bytes.Buffer
	if err := layout.ExecuteTemplate(&buf, "error", d); err != nil {
		return fmt.Errorf("web: render error page: %w", err)
	}
	SetHeaders(w.Header())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, err := w.Write(buf.Bytes())
	return err
}

// Routes serves the stylesheet and the script.
func Routes(e *echo.Echo) {
	for path, h := range map[string]echo.HandlerFunc{
		StylePath:         serveAsset("text/css; charset=utf-8", style),
		CopyScriptPath:    serveAsset("text/javascript; charset=utf-8", copyScript),
		PasskeyScriptPath: serveAsset("text/javascript; charset=utf-8", passkeyScript),
	} {
		e.GET(path, h)
		e.HEAD(path, h)
	}
}

func serveAsset(contentType string, body []byte) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Cache-Control", "public, max-age=3600")
		h.Set("X-Content-Type-Options", "nosniff")
		return c.Blob(http.StatusOK, contentType, body)
	}
}
