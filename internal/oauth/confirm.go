package oauth

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/internal/users"
	"github.com/finsvc/finsvc/internal/web"
)

// askFirst reports whether the form is the confirmation page's (act now;
// its token is bound to the action's path, web.ConfirmPurpose). Otherwise
// it answers: the confirmation page when the form is the one of
// formPurpose (ask names what will happen), a 403 page when it is neither.
func (s *Service) askFirst(c echo.Context, u *users.User, formPurpose string, ask func() (*web.Confirmation, error)) (bool, error) {
	confirm := web.ConfirmPurpose(c.Request().URL.Path)
	if s.checkCSRF(c, confirm, "") {
		return true, nil
	}
	if !s.checkCSRF(c, formPurpose, "") {
		return false, s.errorPage(c, http.StatusForbidden, "Session expired", "The form expired or was not sent by this site.")
	}
	cp, err := ask()
	if err != nil {
		return false, err
	}
	cp.Action, cp.Token = c.Request().URL.Path, s.csrfToken(c.Request().Context(), s.csrfSeed(c), confirm, "")
	return false, s.render(c, http.StatusOK, "confirm", &page{Layout: web.Layout{Title: cp.Title, User: u, Confirm: cp}})
}

// notice is the flash of a page that shows what the last action did.
type notice struct {
	Notice string `json:"n"`
}
