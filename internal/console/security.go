package console

import (
	"fmt"
	"net/http"

	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/mfa"
	"github.com/finsvc/finsvc/internal/web"
)

// The tenant's second-factor policy (whom a second factor is required of)
// and an admin's reset of another user's factors. Both are the user
// administration's (the policy's rule for updateUser: admins), and both
// ask for a fresh second factor of an admin who has one (stepped).

// securityPath is the policy page.
const securityPath = "/console/security"

// securityPage is the policy page's data.
type securityPage struct {
	Policy  mfa.Policy
	Choices []policyChoice
}

type policyChoice struct {
	Value   mfa.Policy
	Label   string
	Current bool
}

var policyLabels = []policyChoice{
	{Value: mfa.PolicyOff, Label: "Not required (each user may set one up)"},
	{Value: mfa.PolicyAdmins, Label: "Required for admins"},
	{Value: mfa.PolicyEveryone, Label: "Required for everyone"},
}

func (cs *Console) security(r *req) error {
	if err := cs.permitOr403(r, auth.OpUpdateUser); err != nil {
		return err
	}
	return cs.securityView(r, "")
}

func (cs *Console) securityView(r *req, msg string) error {
	p, err := cs.d.MFA.Policy(r.Request().Context())
	if err != nil {
		return err
	}
	pg := &securityPage{Policy: p}
	for _, c := range policyLabels {
		c.Current = c.Value == p
		pg.Choices = append(pg.Choices, c)
	}
	return cs.show(r, "security", &view{Layout: web.Layout{Title: "Sign-in security", Nav: "security", Message: msg}, Page: pg})
}

// setPolicy changes the policy (audited by the store). It applies from
// each covered user's next sign-in.
func (cs *Console) setPolicy(r *req) error {
	if err := cs.permitOr403(r, auth.OpUpdateUser); err != nil {
		return err
	}
	p, err := mfa.ParsePolicy(r.Request().PostFormValue("policy"))
	if err != nil {
		return cs.securityView(r, describe(err))
	}
	if err := cs.d.MFA.SetPolicy(r.Request().Context(), p); err != nil {
		return err
	}
	return cs.done(r, securityPath, flash{Notice: "The second-factor policy is saved. It applies from each user's next sign-in."})
}

func (cs *Console) askResetMFA(r *req) (*web.Confirmation, error) {
	if err := cs.permitOr403(r, auth.OpUpdateUser); err != nil {
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
	return &web.Confirmation{Danger: true, Title: "Remove the second factor of " + u.Email + "?", Button: "Remove their second factor", Cancel: "/console/users",
		Effects: []string{
			u.Email + " signs in with their password alone until they set up a new factor; their authenticator app, passkeys and recovery codes stop working.",
			"They are told at their next sign-in. If the policy requires a second factor of them, that sign-in asks them to set one up.",
		}}, nil
}

// resetMFA removes another user's factors (for one who lost their phone
// and their recovery codes).
func (cs *Console) resetMFA(r *req) error {
	if err := cs.permitOr403(r, auth.OpUpdateUser); err != nil {
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
	st, err := cs.d.MFA.Status(ctx, id)
	if err != nil {
		return err
	}
	if !st.Has() && st.RecoveryRemaining == 0 {
		return cs.done(r, "/console/users", flash{Notice: fmt.Sprintf("%s has no second factor: nothing was removed.", u.Email)})
	}
	if err := cs.d.MFA.Remove(ctx, audit.UserActor(r.user.ID), id); err != nil {
		return err
	}
	return cs.done(r, "/console/users", flash{Notice: fmt.Sprintf("The second factor of %s was removed; they are told at their next sign-in.", u.Email)})
}

// stepped asks for a fresh second factor (internal/oauth's step-up page)
// before h, of a user who has one; back is the page to return to: this
// page for a GET, the page the form was on for a POST.
func (cs *Console) stepped(h handler) handler {
	return func(r *req) error {
		back := r.Request().URL.RequestURI()
		if r.Request().Method != http.MethodGet {
			back = formPage(r.Request())
		}
		ok, err := cs.d.Sessions.RequireStepUp(r.Context, r.user, back)
		if !ok || err != nil {
			return err
		}
		return h(r)
	}
}
