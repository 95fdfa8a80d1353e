package oauth

import (
	"context"
	"net"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/mfa"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/users"
	"github.com/finsvc/finsvc/internal/web"
)

// Passkeys on the factor and step-up pages. The page's passkey form
// (web.PasskeyScriptPath drives it) first posts its CSRF token to the
// form's action + "/begin", which answers the options for
// navigator.credentials.get as JSON (the ceremony is kept server-side by
// internal/mfa: single use, five minutes); the script then posts the
// browser's answer as the form's credential field to the action, which
// ends as the code form does: signed in on a new session id with hwk in
// its amr, or the step-up given. Refusals share the sign-in's throttle.

// passkeyBeginSuffix is the path under a form's action that begins its
// ceremony.
const passkeyBeginSuffix = "/passkey/begin"

// RelyingParty is the passkeys' relying party of the request's tenant:
// its host under the configured base domain, with the scheme and port
// the browser used.
func (s *Service) RelyingParty(c echo.Context) mfa.RelyingParty {
	r := c.Request()
	scheme := "http"
	if s.secure(r) {
		scheme = "https"
	}
	_, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		port = ""
	}
	return mfa.TenantRelyingParty(tenant.MustFromContext(r.Context()).Slug, s.cfg.BaseDomain, scheme, port)
}

func passkeyUser(u *users.User) mfa.PasskeyUser {
	return mfa.PasskeyUser{ID: u.ID, Email: u.Email, Name: u.Name}
}

// passkeyJSONError answers a begin the script cannot go on from.
func passkeyJSONError(c echo.Context, status int, msg string) error {
	return c.JSON(status, map[string]string{"message": msg})
}

// beginPasskey answers the options of a passkey sign-in of u.
func (s *Service) beginPasskey(c echo.Context, u *users.User) error {
	if !s.checkCSRF(c, "factor", "") {
		return passkeyJSONError(c, http.StatusForbidden, "The page expired. Reload it and try again.")
	}
	opts, err := s.mfa.BeginPasskeyLogin(c.Request().Context(), s.RelyingParty(c), passkeyUser(u))
	if apperr.Is(err, apperr.Conflict) {
		return passkeyJSONError(c, http.StatusConflict, "No passkey is registered for this account.")
	}
	if err != nil {
		return err
	}
	web.SetHeaders(c.Response().Header())
	return c.JSONBlob(http.StatusOK, opts)
}

func (s *Service) handlePasskeyBegin(c echo.Context) error {
	row, u, err := s.session(c)
	if err != nil {
		return err
	}
	if row == nil || row.Stage != stageFactor || s.mfa == nil {
		return passkeyJSONError(c, http.StatusUnauthorized, "Sign in again.")
	}
	return s.beginPasskey(c, u)
}

func (s *Service) handleStepUpPasskeyBegin(c echo.Context) error {
	u, err := s.CurrentUser(c)
	if err != nil {
		return err
	}
	if u == nil || s.mfa == nil {
		return passkeyJSONError(c, http.StatusUnauthorized, "Sign in again.")
	}
	return s.beginPasskey(c, u)
}

// verifyPasskey checks the browser's passkey answer for u, throttled as a
// code is (throttledFactor).
func (s *Service) verifyPasskey(c echo.Context, u *users.User) (*mfa.Result, error) {
	return s.throttledFactor(c, u, func(ctx context.Context) (*mfa.Result, error) {
		return s.mfa.FinishPasskeyLogin(ctx, s.RelyingParty(c), passkeyUser(u), []byte(c.Request().PostFormValue("credential")))
	})
}

// passkeyRefusal is the factor page's answer to a refused passkey.
func (s *Service) passkeyRefusal(c echo.Context, u *users.User, err error, next string, stepUp bool) error {
	return s.factorRefusal(c, u, err, "The passkey was not accepted. Try again, or use another factor.", next, stepUp)
}

// handlePasskey completes a sign-in with a passkey, as a good code does.
func (s *Service) handlePasskey(c echo.Context) error {
	row, u, err := s.session(c)
	if err != nil {
		return err
	}
	next := safeNextOr(c.Request().PostFormValue("next"), "")
	if row == nil || row.Stage != stageFactor || s.mfa == nil {
		return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(next))
	}
	if !s.checkCSRF(c, "factor", "") {
		return s.errorPage(c, http.StatusForbidden, "Session expired", "The form expired or was not sent by this site. Go back, reload the page and try again.")
	}
	res, err := s.verifyPasskey(c, u)
	if err != nil {
		return s.passkeyRefusal(c, u, err, next, false)
	}
	now := s.now().UTC()
	if err := s.startSession(c, u.ID, "", joinAMR(row.AMR, res.Method), &now); err != nil {
		return err
	}
	return s.signedIn(c, u, next)
}

// handleStepUpPasskey gives the step-up with a passkey.
func (s *Service) handleStepUpPasskey(c echo.Context) error {
	next := safeNextOr(c.Request().PostFormValue("next"), web.Home)
	u, err := s.requireUser(c, web.StepUpPath+"?next="+url.QueryEscape(next))
	if u == nil || err != nil {
		return err
	}
	if s.mfa == nil {
		return c.Redirect(http.StatusSeeOther, next)
	}
	if !s.checkCSRF(c, "factor", "") {
		return s.errorPage(c, http.StatusForbidden, "Session expired", "The form expired or was not sent by this site. Go back, reload the page and try again.")
	}
	res, err := s.verifyPasskey(c, u)
	if err != nil {
		return s.passkeyRefusal(c, u, err, next, true)
	}
	if err := s.SecondFactorGiven(c, res.Method); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, next)
}
