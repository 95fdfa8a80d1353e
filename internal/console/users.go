package console

import (
	"fmt"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/users"
	"github.com/finsvc/finsvc/internal/web"
)

type usersPage struct {
	Users []users.User
	Pager pager
	Roles []string
	// The form as sent, when it was refused, and one sentence beside
	// each refused field.
	Email, Name, Role string
	Errors            map[string]string
}

// userLabels name the add-user form's fields in its messages.
var userLabels = map[string]string{"email": "The email", "name": "The name", "role": "The role", "password": "The password"}

var roleChoices = []string{"viewer", "member", "admin"}

// users lists the tenant's users (admins only, as GET /users).
func (cs *Console) users(r *req) error {
	if err := cs.permitOr403(r, auth.OpListUsers); err != nil {
		return err
	}
	return cs.usersView(r, "", &usersPage{Role: "member"})
}

func (cs *Console) usersView(r *req, msg string, p *usersPage) error {
	pg := pageRequest(r.Context)
	list, total, err := cs.d.Users.List(r.Request().Context(), pg)
	if err != nil {
		return err
	}
	p.Users, p.Pager, p.Roles = list, newPager(pg, total), roleChoices
	return cs.show(r, "users", &view{Layout: web.Layout{Title: "Users", Nav: "users", Message: msg}, Page: p})
}

// usersRefused shows a refusal of internal/users (bad input, the last-admin
// rule, a taken email) on the list, keeping what was typed but passwords.
func (cs *Console) usersRefused(r *req, err error, p *usersPage) error {
	if apperr.Is(err, apperr.Invalid) || apperr.Is(err, apperr.Conflict) || apperr.Is(err, apperr.Unprocessable) {
		if p.Errors = web.FieldErrors(err, userLabels); p.Errors != nil && p.Email != "" {
			// The add-user form: each sentence beside its field.
			return cs.usersView(r, "The user was not added: see the message beside the field.", p)
		}
		return cs.usersView(r, describe(err), p)
	}
	return err
}

// createUser is the invite form: an empty password makes internal/users draw a
// one-time password, shown once after the redirect.
func (cs *Console) createUser(r *req) error {
	if err := cs.permitOr403(r, auth.OpCreateUser); err != nil {
		return err
	}
	email, name, role := r.Request().PostFormValue("email"), r.Request().PostFormValue("name"), r.Request().PostFormValue("role")
	u, generated, err := cs.d.Users.CreateWithPassword(r.Request().Context(), email, name, role, r.Request().PostFormValue("password"))
	if err != nil {
		return cs.usersRefused(r, err, &usersPage{Email: email, Name: name, Role: role})
	}
	f := flash{Notice: fmt.Sprintf("%s was created as %s.", u.Email, u.Role)}
	if generated != "" {
		f.Notice += " Give them this one-time password; it is shown only once."
		f.Secret = generated
	}
	return cs.done(r, "/console/users", f)
}

func (cs *Console) changeRole(r *req) error {
	if err := cs.permitOr403(r, auth.OpUpdateUser); err != nil {
		return err
	}
	id, err := idParam(r.Context, "id")
	if err != nil {
		return err
	}
	role := r.Request().PostFormValue("role")
	u, err := cs.d.Users.Update(r.Request().Context(), id, nil, &role)
	if err != nil {
		return cs.usersRefused(r, err, &usersPage{Role: "member"})
	}
	return cs.done(r, "/console/users", flash{Notice: fmt.Sprintf("%s is now %s.", u.Email, u.Role)})
}

func (cs *Console) deactivateUser(r *req) error {
	if err := cs.permitOr403(r, auth.OpDeleteUser); err != nil {
		return err
	}
	id, err := idParam(r.Context, "id")
	if err != nil {
		return err
	}
	if err := cs.d.Users.Deactivate(r.Request().Context(), id); err != nil {
		return cs.usersRefused(r, err, &usersPage{Role: "member"})
	}
	return cs.done(r, "/console/users", flash{Notice: fmt.Sprintf("User %d was deactivated; their sessions and tokens are revoked.", id)})
}

// askDeactivate names what deactivating a user does.
func (cs *Console) askDeactivate(r *req) (*web.Confirmation, error) {
	if err := cs.permitOr403(r, auth.OpDeleteUser); err != nil {
		return nil, err
	}
	id, err := idParam(r.Context, "id")
	if err != nil {
		return nil, err
	}
	u, err := cs.d.Users.Get(r.Request().Context(), id)
	if err != nil {
		return nil, err
	}
	return &web.Confirmation{
		Title: fmt.Sprintf("Deactivate %s?", u.Email), Button: "Deactivate " + u.Email, Danger: true, Cancel: "/console/users",
		Effects: []string{
			u.Email + " can no longer sign in; their sessions and every app's access tokens are revoked now.",
			"Webhook registrations they created stop receiving events.",
			"You can reactivate them later from this page; apps will need to be authorized again.",
		},
	}, nil
}

// reactivateUser undoes a deactivation: the user may sign in again.
func (cs *Console) reactivateUser(r *req) error {
	if err := cs.permitOr403(r, auth.OpUpdateUser); err != nil {
		return err
	}
	id, err := idParam(r.Context, "id")
	if err != nil {
		return err
	}
	u, err := cs.d.Users.Reactivate(r.Request().Context(), id)
	if err != nil {
		return cs.usersRefused(r, err, &usersPage{Role: "member"})
	}
	return cs.done(r, "/console/users", flash{Notice: fmt.Sprintf("%s is active again and can sign in with their password.", u.Email)})
}

// issueOneTimePassword gives a user a new one-time password (as POST
// /users/{id}/one-time-password), shown once after the redirect.
func (cs *Console) issueOneTimePassword(r *req) error {
	if err := cs.permitOr403(r, auth.OpIssueOneTimePassword); err != nil {
		return err
	}
	id, err := idParam(r.Context, "id")
	if err != nil {
		return err
	}
	ctx := r.Request().Context()
	u, err := cs.d.Users.Get(ctx, id)
	if err != nil {
		return err
	}
	pw, expires, err := cs.d.Users.IssueOneTimePassword(ctx, id)
	if err != nil {
		return cs.usersRefused(r, err, &usersPage{Role: "member"})
	}
	return cs.done(r, "/console/users", flash{
		Notice: fmt.Sprintf("Give %s this one-time password; it is shown only once and works for one sign-in until %s. Their password no longer works and their sessions were signed out.",
			u.Email, expires.UTC().Format("2006-01-02 15:04 UTC")),
		Secret: pw,
	})
}
