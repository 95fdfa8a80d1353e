package oauth

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/clientaddr"
	"github.com/finsvc/finsvc/internal/mfa"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/users"
	"github.com/finsvc/finsvc/internal/web"
)

// The second factor at sign-in and before sensitive actions (internal/mfa
// holds the factors). A correct password of a user with a second factor
// opens a half session (stageFactor) that reaches only the factor page
// (web.FactorPath) and sign-out: every other page sees nobody signed in
// and LoginRedirect sends it back there, so no page, console action or
// authorization code is had on the password alone. A user the tenant's
// policy covers who has no factor gets a half session at web.StageEnrol,
// which reaches only the console's enrolment (web.AccountPath) and
// sign-out. Each completed step starts a new session id. Wrong codes spend
// the sign-in's throttling counters (throttle.go), per email and address.

// Stages of a half session (webSession.Stage).
const stageFactor = "factor"

// HalfSessionTTL is how long a sign-in may wait for its second factor or
// its enrolment before the password must be typed again.
const HalfSessionTTL = 15 * time.Minute

// StepUpWindow is how long a second factor counts as fresh for a
// sensitive action (RequireStepUp).
const StepUpWindow = 5 * time.Minute

// WithMFA sets the second-factor store (default: none, and no page asks
// for a second factor).
func WithMFA(m *mfa.Store) Option { return func(s *Service) { s.mfa = m } }

// factorPage is the data of the code form (sign-in and step-up).
type factorPage struct {
	Action string // where the form posts
	StepUp bool
	// What the user holds: a code (an authenticator app or recovery
	// codes) and passkeys (passkey.go).
	Code, Passkey bool
}

// afterPassword continues a sign-in whose password was right: to the
// second factor, to enrolment, or signed in. signedIn is false while a
// second factor is still owed (the sign-in's throttle does not count it
// as a success yet).
func (s *Service) afterPassword(c echo.Context, u *users.User, next string) (signedIn bool, err error) {
	ctx := c.Request().Context()
	stage := ""
	var told func() error
	if s.mfa != nil {
		st, err := s.mfa.Status(ctx, u.ID)
		if err != nil {
			return false, err
		}
		if st.Has() {
			if err := s.startSession(c, u.ID, stageFactor, "pwd", nil); err != nil {
				return false, err
			}
			return false, c.Redirect(http.StatusSeeOther, web.FactorPath+"?next="+url.QueryEscape(next))
		}
		reset, err := s.mfa.TakeResetNotice(ctx, u.ID)
		if err != nil {
			return false, err
		}
		required, err := s.mfa.Required(ctx, u.ID, u.Role)
		if err != nil {
			return false, err
		}
		if required {
			stage = web.StageEnrol
		}
		if reset {
			// Told once, on the page the sign-in lands on.
			dest := web.AccountPath
			if !required {
				dest = pathOf(s.destination(u, next))
			}
			told = func() error {
				return s.SetFlash(c, u.ID, dest, &notice{Notice: "An admin removed your second factor. Set up a new one under Second factor."})
			}
		}
	}
	if err := s.startSession(c, u.ID, stage, "pwd", nil); err != nil {
		return false, err
	}
	if told != nil {
		if err := told(); err != nil {
			return false, err
		}
	}
	if stage == web.StageEnrol {
		return true, c.Redirect(http.StatusSeeOther, web.AccountPath+"?next="+url.QueryEscape(next))
	}
	return true, s.signedIn(c, u, next)
}

// signedIn sends a user whose sign-in is complete on: to choose a password
// after a one-time one, else to next or their landing page.
func (s *Service) signedIn(c echo.Context, u *users.User, next string) error {
	if u.PasswordChangeRequired {
		return c.Redirect(http.StatusSeeOther, web.PasswordPath+"?next="+url.QueryEscape(next))
	}
	return c.Redirect(http.StatusSeeOther, s.destination(u, next))
}

func (s *Service) destination(u *users.User, next string) string {
	if next == "" {
		return s.landing(u)
	}
	return next
}

// pathOf is the path of a local URL (a flash is keyed by path).
func pathOf(local string) string {
	p, _, _ := strings.Cut(local, "?")
	return p
}

// halfRedirect sends a half session to the one page it may reach; false
// when the browser has none.
func (s *Service) halfRedirect(c echo.Context, next string) (bool, error) {
	row, _, err := s.session(c)
	if err != nil || row == nil {
		return false, err
	}
	status := http.StatusFound
	if c.Request().Method != http.MethodGet && c.Request().Method != http.MethodHead {
		status = http.StatusSeeOther
	}
	switch row.Stage {
	case stageFactor:
		return true, c.Redirect(status, web.FactorPath+"?next="+url.QueryEscape(next))
	case web.StageEnrol:
		return true, c.Redirect(status, web.AccountPath+"?next="+url.QueryEscape(next))
	}
	return false, nil
}

func (s *Service) renderFactor(c echo.Context, u *users.User, status int, msg, next string, stepUp bool) error {
	title, action := "Enter your second factor", web.FactorPath
	if stepUp {
		title, action = "Confirm it is you", web.StepUpPath
	}
	fp := &factorPage{Action: action, StepUp: stepUp, Code: true}
	if s.mfa != nil {
		st, err := s.mfa.Status(c.Request().Context(), u.ID)
		if err != nil {
			return err
		}
		fp.Code, fp.Passkey = st.TOTP || st.RecoveryRemaining > 0 || st.Passkeys == 0, st.Passkeys > 0
	}
	return s.render(c, status, "factor", &page{
		Layout: web.Layout{Title: title, User: u, Message: msg, Passkey: fp.Passkey},
		Next:   next,
		CSRF:   s.csrfToken(c.Request().Context(), s.csrfSeed(c), "factor", ""),
		Factor: fp,
	})
}

func (s *Service) handleFactorPage(c echo.Context) error {
	row, u, err := s.session(c)
	if err != nil {
		return err
	}
	next := safeNextOr(c.QueryParam("next"), "")
	if row == nil || row.Stage != stageFactor {
		return c.Redirect(http.StatusFound, "/login?next="+url.QueryEscape(next))
	}
	return s.renderFactor(c, u, http.StatusOK, "", next, false)
}

// verifyCode checks a code u typed (throttledFactor).
func (s *Service) verifyCode(c echo.Context, u *users.User, code string) (*mfa.Result, error) {
	return s.throttledFactor(c, u, func(ctx context.Context) (*mfa.Result, error) { return s.mfa.Verify(ctx, u.ID, code) })
}

// throttledFactor runs check, a second factor's verification for u,
// throttled with the sign-in's counters (a refusal counts as a failed
// sign-in): over them apperr.TooManyRequests (Retry-After set) without
// checking.
func (s *Service) throttledFactor(c echo.Context, u *users.User, check func(context.Context) (*mfa.Result, error)) (*mfa.Result, error) {
	ctx := c.Request().Context()
	done, wait, ok := s.logins.begin(tenant.ID(ctx), u.Email, clientaddr.From(c.Request(), s.cfg.TrustProxy))
	if !ok {
		s.log.Warn("second factor throttled", "tenant", tenant.ID(ctx), "retry_after", wait.Round(time.Second))
		c.Response().Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
		return nil, apperr.E(apperr.TooManyRequests, "Too many attempts. Try again later.")
	}
	failed, succeeded := false, false
	defer func() { done(failed, succeeded) }()
	res, err := check(ctx)
	failed, succeeded = apperr.Is(err, apperr.Unauthenticated), err == nil
	return res, err
}

// codeRefusal is the factor form's answer to a refused code.
func (s *Service) codeRefusal(c echo.Context, u *users.User, err error, next string, stepUp bool) error {
	return s.factorRefusal(c, u, err, "The code is wrong or was already used. Type the current code of your authenticator app, or a recovery code.", next, stepUp)
}

// factorRefusal is the factor page's answer to a refused factor: the page
// again with wrong (429 when throttled), or err itself when it is not a
// refusal.
func (s *Service) factorRefusal(c echo.Context, u *users.User, err error, wrong, next string, stepUp bool) error {
	switch {
	case apperr.Is(err, apperr.TooManyRequests):
		return s.renderFactor(c, u, http.StatusTooManyRequests, "Too many attempts. Try again later.", next, stepUp)
	case apperr.Is(err, apperr.Unauthenticated):
		return s.renderFactor(c, u, http.StatusUnauthorized, wrong, next, stepUp)
	}
	return err
}

// recoveryNotice tells a user who spent a recovery code how many remain.
func (s *Service) recoveryNotice(c echo.Context, u *users.User, res *mfa.Result, dest string) error {
	if res.Method != mfa.MethodRecovery {
		return nil
	}
	msg := "You used a recovery code; " + strconv.Itoa(res.RecoveryRemaining) + " remain. Make new ones under Account when few are left."
	return s.SetFlash(c, u.ID, pathOf(dest), &notice{Notice: msg})
}

func (s *Service) handleFactor(c echo.Context) error {
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
	res, err := s.verifyCode(c, u, c.Request().PostFormValue("code"))
	if err != nil {
		return s.codeRefusal(c, u, err, next, false)
	}
	now := s.now().UTC()
	if err := s.startSession(c, u.ID, "", joinAMR(row.AMR, res.Method), &now); err != nil {
		return err
	}
	if err := s.recoveryNotice(c, u, res, s.destination(u, next)); err != nil {
		return err
	}
	return s.signedIn(c, u, next)
}

// joinAMR adds method to the space-separated factors amr.
func joinAMR(amr, method string) string {
	f := strings.Fields(amr)
	if !slices.Contains(f, method) {
		f = append(f, method)
	}
	return strings.Join(f, " ")
}

// handleStepUpPage asks a signed-in user with a second factor for it again.
func (s *Service) handleStepUpPage(c echo.Context) error {
	next := safeNextOr(c.QueryParam("next"), web.Home)
	u, err := s.requireUser(c, web.StepUpPath+"?next="+url.QueryEscape(next))
	if u == nil || err != nil {
		return err
	}
	return s.renderFactor(c, u, http.StatusOK, "", next, true)
}

func (s *Service) handleStepUp(c echo.Context) error {
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
	res, err := s.verifyCode(c, u, c.Request().PostFormValue("code"))
	if err != nil {
		return s.codeRefusal(c, u, err, next, true)
	}
	if err := s.SecondFactorGiven(c, res.Method); err != nil {
		return err
	}
	if err := s.recoveryNotice(c, u, res, next); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, next)
}

// SecondFactorGiven records on the browser's session that its user just
// gave a second factor by method (a confirmed enrolment, a step-up): a new
// session id, signed in (an enrolment the policy held it at is done), the
// factor among its amr, and the time for step-up.
func (s *Service) SecondFactorGiven(c echo.Context, method string) error {
	row, u, err := s.session(c)
	if err != nil {
		return err
	}
	if row == nil {
		return apperr.E(apperr.Unauthenticated, "not signed in")
	}
	now := s.now().UTC()
	return s.startSession(c, u.ID, "", joinAMR(row.AMR, method), &now)
}

// SignIn returns the browser's session at any stage, or nil.
func (s *Service) SignIn(c echo.Context) (*web.SignIn, error) {
	row, u, err := s.session(c)
	if row == nil || err != nil {
		return nil, err
	}
	return &web.SignIn{User: u, Stage: row.Stage, AMR: strings.Fields(row.AMR), FactorAt: row.FactorAt}, nil
}

// RequireStepUp lets a sensitive action go on (true) when u has no second
// factor or gave it within StepUpWindow on this session; otherwise it
// sends the browser to the step-up page, which returns to back (a page to
// GET) once the factor is given, and returns false.
func (s *Service) RequireStepUp(c echo.Context, u *users.User, back string) (bool, error) {
	fresh, err := s.freshFactor(c, u)
	if err != nil || fresh {
		return fresh, err
	}
	return false, c.Redirect(http.StatusSeeOther, web.StepUpPath+"?next="+url.QueryEscape(safeNextOr(back, web.Home)))
}

// freshFactor reports whether a sensitive action of u may go on as far as
// the second factor goes: u has none, or gave it within StepUpWindow.
func (s *Service) freshFactor(c echo.Context, u *users.User) (bool, error) {
	if s.mfa == nil {
		return true, nil
	}
	st, err := s.mfa.Status(c.Request().Context(), u.ID)
	if err != nil || !st.Has() {
		return err == nil, err
	}
	row, _, err := s.session(c)
	if err != nil {
		return false, err
	}
	return row != nil && row.FactorAt != nil && s.now().Sub(*row.FactorAt) < StepUpWindow, nil
}
