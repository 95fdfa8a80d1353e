package webui

import (
	"net/http"

	"github.com/finsvc/finsvc/internal/web"
)

// Destructive actions ask first, without JavaScript: the form on a page
// posts the console's CSRF token, and the answer is a page naming what will
// happen; only that page's form acts, because its token is bound to the
// action's path (confirmPurpose), which no other form carries. Reloading
// the confirmation page repeats nothing (it is the answer to a POST that
// changed nothing), and going back leaves everything as it was.

// confirmation is what the confirmation page says.
type confirmation struct {
	Title   string   // the question, e.g. "Delete webhook 5?"
	Effects []string // one sentence per consequence
	Button  string   // the acting button's label
	Cancel  string   // where "Cancel" leads
	Danger  bool     // the button is red
}

// confirmPurpose is the CSRF purpose of the confirmation form of the
// action at r's path.
func confirmPurpose(r *req) string { return "confirm " + r.Request().URL.Path }

// confirmed runs act when the form is the confirmation page's; otherwise,
// for a console form, it asks (ask names what will happen, and refuses
// what the user may not do before asking anything).
func (cs *Console) confirmed(ask func(r *req) (*confirmation, error), act handler) handler {
	return func(r *req) error {
		if cs.d.Sessions.CheckForm(r.Context, confirmPurpose(r)) {
			return act(r)
		}
		if !cs.d.Sessions.CheckForm(r.Context, formPurpose) {
			return cs.expired(r)
		}
		c, err := ask(r)
		if err != nil {
			return err
		}
		v := &view{Layout: web.Layout{Title: c.Title, User: r.user}, Page: &confirmPage{
			confirmation: *c, Action: r.Request().URL.Path, Token: cs.d.Sessions.FormToken(r.Context, confirmPurpose(r)),
		}}
		return cs.render(r.Context, http.StatusOK, "confirm", v)
	}
}

type confirmPage struct {
	confirmation
	Action, Token string
}

// expired is the refusal of a form without a valid token.
func (cs *Console) expired(r *req) error {
	return cs.errorPage(r.Context, r.user, http.StatusForbidden, "Session expired",
		"The form expired or was not sent by this site. Go back, reload the page and try again.")
}
