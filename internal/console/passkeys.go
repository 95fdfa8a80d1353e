package console

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/mfa"
	"github.com/finsvc/finsvc/internal/web"
)

// Passkeys on the account page. "Add a passkey" is a form the passkey
// script (web.PasskeyScriptPath) drives: it posts the form's CSRF token to
// /passkeys/begin, which answers the options of navigator.credentials.create
// as JSON (the ceremony is kept server-side by internal/mfa: single use,
// five minutes), and then posts the name and the browser's answer to
// /passkeys. A passkey added counts as a second factor given (a new
// session id; a sign-in the policy held at enrolment is done). Renaming
// is a form per passkey; removing asks first and, like every change of a
// factor, for a fresh second factor.

func passkeyUser(r *req) mfa.PasskeyUser {
	return mfa.PasskeyUser{ID: r.user.ID, Email: r.user.Email, Name: r.user.Name}
}

// beginPasskey answers the options of a new passkey's registration.
func (cs *Console) beginPasskey(r *req) error {
	if !cs.d.Sessions.CheckForm(r.Context, formPurpose) {
		return r.JSON(http.StatusForbidden, map[string]string{"message": "The page expired. Reload it and try again."})
	}
	opts, err := cs.d.MFA.BeginPasskeyRegistration(r.Request().Context(), cs.d.Sessions.RelyingParty(r.Context), passkeyUser(r))
	if err != nil {
		return err
	}
	web.SetHeaders(r.Response().Header())
	return r.JSONBlob(http.StatusOK, opts)
}

// passkeyLabels name the add form's field in its refusal.
var passkeyLabels = map[string]string{"name": "The name"}

// addPasskey keeps the passkey the browser created.
func (cs *Console) addPasskey(r *req) error {
	ctx := r.Request().Context()
	form := r.Request().PostFormValue
	pk, err := cs.d.MFA.FinishPasskeyRegistration(ctx, cs.d.Sessions.RelyingParty(r.Context), passkeyUser(r), form("name"), []byte(form("credential")))
	switch {
	case apperr.Is(err, apperr.Unauthenticated):
		return cs.accountView(r, http.StatusBadRequest, "The passkey was not accepted. Try again.", nil)
	case apperr.Is(err, apperr.Invalid) && len(web.FieldErrors(err, passkeyLabels)) > 0:
		return cs.accountView(r, http.StatusBadRequest, "", web.FieldErrors(err, passkeyLabels))
	case apperr.Is(err, apperr.Invalid), apperr.Is(err, apperr.Conflict):
		return cs.accountView(r, http.StatusConflict, describe(err), nil)
	case err != nil:
		return err
	}
	if err := cs.d.Sessions.SecondFactorGiven(r.Context, mfa.MethodPasskey); err != nil {
		return err
	}
	next := safeNext(form("next"))
	return cs.doneAccount(r, next, accountFlash{Notice: "The passkey " + strconv.Quote(pk.Name) + " is added: signing in can now use it after your password."})
}

// passkeyN is the passkey number of the path, or 0.
func passkeyN(c echo.Context) int {
	n, err := strconv.Atoi(c.Param("n"))
	if err != nil || n < 1 {
		return 0
	}
	return n
}

func (cs *Console) renamePasskey(r *req) error {
	err := cs.d.MFA.RenamePasskey(r.Request().Context(), r.user.ID, passkeyN(r.Context), r.Request().PostFormValue("name"))
	switch {
	case apperr.Is(err, apperr.Invalid):
		msg := "The name " + web.FieldErrors(err, passkeyLabels)["name"] + "."
		return cs.accountView(r, http.StatusBadRequest, msg, nil)
	case err != nil:
		return err
	}
	return cs.doneAccount(r, "", accountFlash{Notice: "The passkey is renamed."})
}

func (cs *Console) askRemovePasskey(r *req) (*web.Confirmation, error) {
	list, err := cs.d.MFA.Passkeys(r.Request().Context(), r.user.ID)
	if err != nil {
		return nil, err
	}
	n := passkeyN(r.Context)
	for _, pk := range list {
		if pk.N == n {
			return &web.Confirmation{Danger: true, Title: "Remove the passkey " + strconv.Quote(pk.Name) + "?", Button: "Remove the passkey", Cancel: web.AccountPath,
				Effects: []string{
					"Signing in can no longer use this passkey.",
					"If it was your only second factor, signing in asks for your password only; if your organization requires a second factor, your next sign-in asks you to set one up.",
				}}, nil
		}
	}
	return nil, apperr.E(apperr.NotFound, "no such passkey")
}

func (cs *Console) removePasskey(r *req) error {
	if err := cs.d.MFA.RemovePasskey(r.Request().Context(), audit.UserActor(r.user.ID), r.user.ID, passkeyN(r.Context)); err != nil {
		return err
	}
	return cs.doneAccount(r, "", accountFlash{Notice: "The passkey was removed."})
}
