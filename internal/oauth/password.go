package oauth

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/clientaddr"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/textinput"
	"github.com/finsvc/finsvc/internal/users"
	"github.com/finsvc/finsvc/internal/web"
)

// The password page (web.PasswordPath): every signed-in user changes their
// password there (the current one required), and a user who signed in with
// a one-time password chooses one there before anything else.

// passwordRedirect sends a user who must choose a password to the password
// page, which returns to next afterwards.
func passwordRedirect(c echo.Context, next string) error {
	return c.Redirect(http.StatusFound, web.PasswordPath+"?next="+url.QueryEscape(next))
}

// passwordPage is the password page's own data.
type passwordPage struct {
	Required bool   // choosing after a one-time password: no current one
	Notice   string // after a change
}

func (s *Service) renderPassword(c echo.Context, u *users.User, status int, msg, next string, notice string) error {
	title := "Change your password"
	if u.PasswordChangeRequired {
		title = "Choose your password"
	}
	return s.render(c, status, "password", &page{
		Layout:   web.Layout{Title: title, Nav: "password", User: u, Message: msg},
		Next:     next,
		CSRF:     s.csrfToken(c.Request().Context(), s.csrfSeed(c), "password", ""),
		Password: &passwordPage{Required: u.PasswordChangeRequired, Notice: notice},
	})
}

// passwordDone is the flash a change leaves for the page it returns to.
type passwordDone struct {
	Notice string `json:"n"`
}

func (s *Service) handlePasswordPage(c echo.Context) error {
	u, err := s.currentUser(c)
	if err != nil {
		return err
	}
	next := c.QueryParam("next")
	if u == nil {
		return s.LoginRedirect(c, web.PasswordPath)
	}
	var done passwordDone
	s.TakeFlash(c, u.ID, web.PasswordPath, &done)
	return s.renderPassword(c, u, http.StatusOK, "", safeNextOr(next, ""), done.Notice)
}

func (s *Service) handleChangePassword(c echo.Context) error {
	u, err := s.currentUser(c)
	if err != nil {
		return err
	}
	if u == nil {
		return s.LoginRedirect(c, web.PasswordPath)
	}
	if !s.checkCSRF(c, "password", "") {
		return s.errorPage(c, http.StatusForbidden, "Session expired", "The form expired or was not sent by this site. Go back, reload the page and try again.")
	}
	ctx := c.Request().Context()
	next := safeNextOr(c.Request().PostFormValue("next"), "")
	if bad := textinput.BadValues(c.Request().PostForm); len(bad) > 0 {
		return s.renderPassword(c, u, http.StatusBadRequest, "A field "+textinput.Message+".", next, "")
	}
	current, password := c.Request().PostFormValue("current_password"), c.Request().PostFormValue("password")
	if password != c.Request().PostFormValue("password_confirm") {
		return s.renderPassword(c, u, http.StatusBadRequest, "The two new passwords differ; type the same one twice.", next, "")
	}
	// Guessing the current password here is throttled like the sign-in.
	doneTry, wait, ok := s.logins.begin(tenant.ID(ctx), u.Email, clientaddr.From(c.Request(), s.cfg.TrustProxy))
	if !ok {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
		return s.renderPassword(c, u, http.StatusTooManyRequests, "Too many attempts. Try again later.", next, "")
	}
	err = s.users.ChangePassword(ctx, u.ID, current, password)
	doneTry(fieldOf(err, "current_password"), err == nil)
	if apperr.Is(err, apperr.Invalid) {
		return s.renderPassword(c, u, http.StatusBadRequest, describe(err), next, "")
	}
	if err != nil {
		return err
	}
	// Every other session of the user ends; this one stays.
	keep := ""
	if ck, err := c.Cookie(sessionCookie); err == nil {
		keep = sha256Hex(ck.Value)
	}
	if err := s.store.RevokeSessions(ctx, u.ID, keep); err != nil {
		return err
	}
	if u.PasswordChangeRequired {
		if next == "" {
			next = s.landing(u)
		}
		return c.Redirect(http.StatusSeeOther, next)
	}
	if err := s.SetFlash(c, u.ID, web.PasswordPath, passwordDone{Notice: "Your password was changed, and your other sessions were signed out. Apps you authorized keep their access: revoke it under Authorized apps if you need to."}); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, web.PasswordPath)
}

// fieldOf reports whether err is a refusal on field.
func fieldOf(err error, field string) bool {
	var ae *apperr.Error
	return errors.As(err, &ae) && len(ae.Fields[field]) > 0
}
