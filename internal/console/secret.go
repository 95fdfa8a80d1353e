package console

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/web"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
)

// Revealing a registration's signing secret. Whoever may rotate it may
// read it (the policy's rule for rotateWebhookSecret, and the registry's
// ownership), after typing their password again: a session left open on
// a desk does not hand out the secret. The form posts the password; the
// secret comes back on the GET the POST redirects to, through the sealed
// flash cookie (POST-redirect-GET), so that reloading shows the form
// again instead of posting the password twice, and the secret is in no
// URL, no log and no cached page (every page is no-store).

// secretPage is the reveal page: the password form, or the secrets just
// revealed.
type secretPage struct {
	W        *registry.Webhook
	Errors   fieldErrors
	Revealed *revealed
}

// revealed is registry.Revealed as the flash carries it.
type revealed struct {
	Current           string     `json:"c"`
	Previous          string     `json:"p,omitempty"`
	PreviousExpiresAt *time.Time `json:"e,omitempty"`
}

func secretPath(id int64) string { return webhookPath(id) + "/secret" }

// passwordLabels name the reveal form's field in its refusal.
var passwordLabels = map[string]string{"password": "Your password"}

// secret is the reveal page: the password form, or, right after a
// successful reveal, the secrets.
func (cs *Console) secret(r *req) error {
	w, err := cs.revealable(r)
	if err != nil {
		return err
	}
	p, notice := &secretPage{W: w}, ""
	var f flash
	if cs.d.Sessions.TakeFlash(r.Context, r.user.ID, r.Request().URL.Path, &f) && f.Revealed != nil {
		p.Revealed, notice = f.Revealed, f.Notice
	}
	return cs.showSecret(r, http.StatusOK, notice, "", p)
}

// revealSecret checks the password typed again and reveals the secrets.
func (cs *Console) revealSecret(r *req) error {
	w, err := cs.revealable(r)
	if err != nil {
		return err
	}
	password := r.Request().PostFormValue("password")
	got, err := cs.d.Webhooks.Reveal(r.Request().Context(), r.p, w.ID, func(context.Context) error {
		return cs.d.Sessions.ConfirmPassword(r.Context, r.user, password)
	})
	switch {
	case apperr.Is(err, apperr.Unauthenticated):
		return cs.showSecret(r, http.StatusBadRequest, "", "", &secretPage{W: w, Errors: web.FieldErrors(err, passwordLabels)})
	case apperr.Is(err, apperr.TooManyRequests):
		return cs.showSecret(r, http.StatusTooManyRequests, "", describe(err), &secretPage{W: w})
	case err != nil:
		return err
	}
	return cs.done(r, secretPath(w.ID), flash{Revealed: &revealed{Current: got.Current, Previous: got.Previous, PreviousExpiresAt: got.PreviousExpiresAt},
		Notice: "Your password was confirmed. The secret is shown on this page only; reloading it hides the secret."})
}

// revealable is the registration of the page, once the user may reveal
// its secret: a refused role is the shared 403 page, an invisible or
// foreign registration a 404 (the registry asks the same again).
func (cs *Console) revealable(r *req) (*registry.Webhook, error) {
	id, err := idParam(r.Context, "id")
	if err != nil {
		return nil, err
	}
	if err := cs.permitOr403(r, auth.OpRotateWebhookSecret); err != nil {
		return nil, err
	}
	return cs.d.Webhooks.Get(r.Request().Context(), r.p, id)
}

// showSecret renders the reveal page; only the page showing the secrets
// loads the Copy button's script.
func (cs *Console) showSecret(r *req, status int, notice, msg string, p *secretPage) error {
	return cs.render(r.Context, status, "secret", &view{
		Layout: web.Layout{Title: fmt.Sprintf("Signing secret of webhook %d", p.W.ID), Nav: "webhooks", User: r.user, Message: msg,
			Script: p.Revealed != nil},
		Notice: notice, Page: p,
	})
}
