package console

import (
	"net/http"

	"github.com/finsvc/finsvc/internal/web"
)

// confirmed runs act when the form is the confirmation page's (its token
// bound to the action's path, web.ConfirmPurpose); otherwise, for a console
// form, it answers with that page (ask names what will happen, and refuses
// what the user may not do before asking anything).
func (cs *Console) confirmed(ask func(r *req) (*web.Confirmation, error), act handler) handler {
	return func(r *req) error {
		path := r.Request().URL.Path
		if cs.d.Sessions.CheckForm(r.Context, web.ConfirmPurpose(path)) {
			return act(r)
		}
		if !cs.d.Sessions.CheckForm(r.Context, formPurpose) {
			return cs.expired(r)
		}
		c, err := ask(r)
		if err != nil {
			return err
		}
		c.Action, c.Token = path, cs.d.Sessions.FormToken(r.Context, web.ConfirmPurpose(path))
		return cs.render(r.Context, http.StatusOK, "confirm", &view{Layout: web.Layout{Title: c.Title, User: r.user, Confirm: c}})
	}
}

// expired is the refusal of a form without a valid token.
func (cs *Console) expired(r *req) error {
	return cs.errorPage(r.Context, r.user, http.StatusForbidden, "Session expired",
		"The form expired or was not sent by this site. Go back, reload the page and try again.")
}
