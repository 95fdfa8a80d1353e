package console

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"image/png"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/mfa"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/textinput"
	"github.com/finsvc/finsvc/internal/web"
)

// The account page (web.AccountPath): the user's second factor. An
// authenticator app is set up by scanning a QR code (a PNG drawn here, so
// the page works without JavaScript) or typing its secret, and confirmed
// by a first code; the ten recovery codes are shown once, right after
// (every page is no-store), and can be made anew. A sign-in the tenant's
// policy holds at enrolment (web.StageEnrol) reaches this page and its
// enrolment forms only (enrolling); completing the enrolment signs it in.
// The page also says which factors the session used.

// accountPage is the account page's data.
type accountPage struct {
	Status   mfa.Status
	Passkeys []mfa.Passkey
	Enrol    bool // the policy holds this sign-in until a factor is set up
	AMR      []string
	Pending  *pendingTOTP
	Recovery []string // shown once
	Next     string
	Errors   fieldErrors
}

// pendingTOTP is an enrolment waiting for its first code.
type pendingTOTP struct {
	QR     template.URL // data:image/png;base64,…
	Secret string
}

// accountFlash is what an account form leaves for the page: a notice, and
// the recovery codes shown once.
type accountFlash struct {
	Notice   string   `json:"n,omitempty"`
	Recovery []string `json:"c,omitempty"`
}

// enrolling is handle for the account page's enrolment: it also serves a
// sign-in the policy holds at enrolment.
func (cs *Console) enrolling(h handler) echo.HandlerFunc {
	return func(c echo.Context) error {
		si, err := cs.d.Sessions.SignIn(c)
		if err != nil {
			return cs.fail(c, nil, err)
		}
		if si == nil || si.Stage != web.StageEnrol {
			// Signed in (or sent to the sign-in or factor page) as
			// everywhere else.
			return cs.handle(h)(c)
		}
		u := si.User
		if field, ok := badText(c); !ok {
			return cs.errorPage(c, u, http.StatusBadRequest, "Bad request", "The field "+field+" "+textinput.Message+".")
		}
		r := &req{Context: c, user: u, p: &auth.Principal{TenantID: tenant.ID(c.Request().Context()), UserID: u.ID, Role: u.Role}, pol: cs.d.Policy}
		c.SetRequest(c.Request().WithContext(auth.NewContext(c.Request().Context(), r.p)))
		if err := h(r); err != nil {
			return cs.fail(c, u, err)
		}
		return nil
	}
}

func (cs *Console) account(r *req) error {
	return cs.accountView(r, http.StatusOK, "", nil)
}

func (cs *Console) accountView(r *req, status int, msg string, errs fieldErrors) error {
	ctx := r.Request().Context()
	si, err := cs.d.Sessions.SignIn(r.Context)
	if err != nil {
		return err
	}
	st, err := cs.d.MFA.Status(ctx, r.user.ID)
	if err != nil {
		return err
	}
	p := &accountPage{Status: st, Enrol: si != nil && si.Stage == web.StageEnrol, Next: safeNext(r.QueryParam("next")), Errors: errs}
	if si != nil {
		p.AMR = si.AMR
	}
	if p.Passkeys, err = cs.d.MFA.Passkeys(ctx, r.user.ID); err != nil {
		return err
	}
	if !st.Has() {
		e, err := cs.d.MFA.PendingTOTP(ctx, r.user.ID, r.user.Email)
		switch {
		case apperr.Is(err, apperr.NotFound):
		case err != nil:
			return err
		default:
			if p.Pending, err = pending(e); err != nil {
				return err
			}
		}
	}
	var f accountFlash
	notice := ""
	if status == http.StatusOK && cs.d.Sessions.TakeFlash(r.Context, r.user.ID, web.AccountPath, &f) {
		notice, p.Recovery = f.Notice, f.Recovery
	}
	title := "Second factor"
	if p.Enrol {
		title = "Set up a second factor"
	}
	v := &view{Layout: web.Layout{Title: title, Nav: "account-security", User: r.user, Message: msg, Passkey: true}, Notice: notice, Page: p}
	if p.Enrol {
		// Nothing else is reachable: the menu would only lead back here.
		v.Layout.Menu = nil
		return cs.renderBare(r.Context, status, "account", v)
	}
	return cs.render(r.Context, status, "account", v)
}

// renderBare is render without the navigation (a sign-in held at
// enrolment).
func (cs *Console) renderBare(c echo.Context, status int, name string, v *view) error {
	v.Tenant = tenant.MustFromContext(c.Request().Context()).Slug
	v.LogoutCSRF = cs.d.Sessions.LogoutToken(c)
	v.CSRF = cs.d.Sessions.FormToken(c, formPurpose)
	return web.Render(c, cs.pages, status, name, v)
}

// pending draws the enrolment's QR code.
func pending(e *mfa.Enrolment) (*pendingTOTP, error) {
	img, err := e.Key.Image(240, 240)
	if err != nil {
		return nil, fmt.Errorf("console: QR code: %w", err)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, fmt.Errorf("console: QR code: %w", err)
	}
	return &pendingTOTP{
		// A PNG this code drew: safe as an image source.
		QR:     template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes())),
		Secret: e.Key.Secret(),
	}, nil
}

// safeNext keeps a local path to return to after enrolment.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if next == "" || err != nil || u.Scheme != "" || u.Host != "" || len(next) < 2 || next[0] != '/' || next[1] == '/' || next[1] == '\\' {
		return ""
	}
	return next
}

func accountPathNext(next string) string {
	if next == "" {
		return web.AccountPath
	}
	return web.AccountPath + "?next=" + url.QueryEscape(next)
}

// beginTOTP starts an enrolment: a new secret, shown on the account page.
func (cs *Console) beginTOTP(r *req) error {
	_, err := cs.d.MFA.BeginTOTP(r.Request().Context(), r.user.ID, r.user.Email)
	if apperr.Is(err, apperr.Conflict) {
		return cs.accountView(r, http.StatusConflict, describe(err), nil)
	}
	if err != nil {
		return err
	}
	return r.Redirect(http.StatusSeeOther, accountPathNext(safeNext(r.Request().PostFormValue("next"))))
}

// codeLabels name the enrolment form's field in its refusal.
var codeLabels = map[string]string{"code": "The code"}

// confirmTOTP checks the first code; the authenticator is then set up, the
// session counts it as given (a new session id), and the recovery codes
// are shown once.
func (cs *Console) confirmTOTP(r *req) error {
	ctx := r.Request().Context()
	codes, err := cs.d.MFA.ConfirmTOTP(ctx, r.user.ID, r.Request().PostFormValue("code"))
	if apperr.Is(err, apperr.Unauthenticated) {
		return cs.accountView(r, http.StatusBadRequest, "", web.FieldErrors(err, codeLabels))
	}
	if apperr.Is(err, apperr.NotFound) {
		return cs.accountView(r, http.StatusConflict, "Start the setup again: no authenticator is waiting for its first code.", nil)
	}
	if err != nil {
		return err
	}
	if err := cs.d.Sessions.SecondFactorGiven(r.Context, mfa.MethodOTP); err != nil {
		return err
	}
	next := safeNext(r.Request().PostFormValue("next"))
	notice := "Your authenticator app is set up: signing in now asks for its code."
	if next != "" {
		notice += " Continue to where you were going once you have saved your recovery codes."
	}
	return cs.doneAccount(r, next, accountFlash{Notice: notice, Recovery: codes})
}

func (cs *Console) doneAccount(r *req, next string, f accountFlash) error {
	if err := cs.d.Sessions.SetFlash(r.Context, r.user.ID, web.AccountPath, f); err != nil {
		return err
	}
	return r.Redirect(http.StatusSeeOther, accountPathNext(next))
}

// regenerateRecovery replaces the recovery codes, shown once.
func (cs *Console) regenerateRecovery(r *req) error {
	codes, err := cs.d.MFA.RegenerateRecovery(r.Request().Context(), r.user.ID)
	if apperr.Is(err, apperr.Conflict) {
		return cs.accountView(r, http.StatusConflict, describe(err), nil)
	}
	if err != nil {
		return err
	}
	return cs.doneAccount(r, "", accountFlash{Notice: "New recovery codes: the previous ones no longer work.", Recovery: codes})
}

func (cs *Console) askRemoveFactor(r *req) (*web.Confirmation, error) {
	return &web.Confirmation{Danger: true, Title: "Remove your authenticator app?", Button: "Remove the authenticator", Cancel: web.AccountPath,
		Effects: []string{
			"Signing in no longer asks for a code from the app (your passkeys, if any, stay).",
			"Your recovery codes stop working.",
			"If your organization requires a second factor, your next sign-in asks you to set one up.",
		}}, nil
}

func (cs *Console) removeFactor(r *req) error {
	if err := cs.d.MFA.RemoveTOTP(r.Request().Context(), audit.UserActor(r.user.ID), r.user.ID); err != nil {
		return err
	}
	return cs.doneAccount(r, "", accountFlash{Notice: "Your authenticator app was removed."})
}
