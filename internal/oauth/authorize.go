package oauth

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/ory/fosite"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/ratelimit"
	"github.com/finsvc/finsvc/internal/textinput"
	"github.com/finsvc/finsvc/internal/users"
	"github.com/finsvc/finsvc/internal/web"
)

// authorizeParams are the authorization request parameters the consent
// form carries through, in a fixed order (they are also MAC'd into the
// form's CSRF token).
var authorizeParams = []string{"client_id", "redirect_uri", "response_type", "state", "scope", "code_challenge", "code_challenge_method"}

// boundParams is the canonical form of the authorization parameters in
// form: what the consent form's CSRF token is bound to.
func boundParams(form url.Values) string {
	var b strings.Builder
	for _, k := range authorizeParams {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(form.Get(k)))
		b.WriteByte('&')
	}
	return b.String()
}

// authorizeErrorCodes are the error codes RFC 6749 section 4.1.2.1 allows
// in an authorization error redirect.
var authorizeErrorCodes = map[string]bool{
	"invalid_request": true, "unauthorized_client": true, "access_denied": true, "unsupported_response_type": true,
	"invalid_scope": true, "server_error": true, "temporarily_unavailable": true,
}

// handleAuthorize is GET /oauth/authorize.
func (s *Service) handleAuthorize(c echo.Context) error {
	if err := s.budget.ChargeAddress(c, ratelimit.BudgetAuthorize); err != nil {
		return s.tooManyPage(c)
	}
	r := c.Request()
	ctx := r.Context()
	if msg := badParams(r.URL.Query()); msg != "" {
		return s.errorPage(c, http.StatusBadRequest, "Cannot authorize this app", msg)
	}
	ar, err := s.provider.NewAuthorizeRequest(ctx, r)
	if err == nil && !redirectRegistered(ar) {
		err = errNotRegistered
	}
	if err != nil {
		return s.authorizeError(c, ar, err)
	}
	if bad := s.checkResponseMode(c, ar); bad != nil {
		return bad
	}
	u, err := s.currentUser(c)
	if err != nil {
		return err
	}
	if u == nil {
		return s.LoginRedirect(c, r.URL.RequestURI())
	}
	if u.PasswordChangeRequired {
		return passwordRedirect(c, r.URL.RequestURI())
	}
	scopes := requestedScopes(ar)
	ok, err := s.store.HasConsent(ctx, u.ID, ar.GetClient().GetID(), scopes)
	if err != nil {
		return err
	}
	if ok {
		return s.issueCode(c, ar, u, scopes)
	}
	form := url.Values{}
	var params []param
	for _, k := range authorizeParams {
		if v := r.URL.Query().Get(k); v != "" {
			form.Set(k, v)
			params = append(params, param{k, v})
		}
	}
	name := ar.GetClient().GetID()
	if cl, err := s.store.Client(ctx, name); err == nil {
		name = cl.Name
	}
	return s.render(c, http.StatusOK, "consent", &page{
		Layout:  web.Layout{Title: "Authorize " + name, User: u},
		AppName: name,
		Scopes:  describeScopes(scopes),
		Params:  params,
		CSRF:    s.csrfToken(ctx, s.csrfSeed(c), "consent", boundParams(form)),
	})
}

// handleConsent is POST /oauth/authorize: the consent form's answer.
func (s *Service) handleConsent(c echo.Context) error {
	if err := s.budget.ChargeAddress(c, ratelimit.BudgetAuthorize); err != nil {
		return s.tooManyPage(c)
	}
	r := c.Request()
	ctx := r.Context()
	if err := r.ParseForm(); err != nil {
		return s.errorPage(c, http.StatusBadRequest, "Bad request", "The form could not be read.")
	}
	if msg := badParams(r.Form); msg != "" {
		return s.errorPage(c, http.StatusBadRequest, "Cannot authorize this app", msg)
	}
	// The token binds the form to the parameters shown on the consent
	// page: a changed state, redirect URI or scope fails here.
	if !s.checkCSRF(c, "consent", boundParams(r.PostForm)) {
		return s.errorPage(c, http.StatusForbidden, "Request expired", "The consent form expired, was altered or was not sent by this site. Start the sign-in from the app again.")
	}
	u, err := s.currentUser(c)
	if err != nil {
		return err
	}
	if u == nil {
		q := url.Values{}
		for _, k := range authorizeParams {
			if v := r.PostForm.Get(k); v != "" {
				q.Set(k, v)
			}
		}
		return s.LoginRedirect(c, "/oauth/authorize?"+q.Encode())
	}
	if u.PasswordChangeRequired {
		return s.errorPage(c, http.StatusForbidden, "Choose your password first", "You signed in with a one-time password: choose your own password, then start again from the app.")
	}
	ar, err := s.provider.NewAuthorizeRequest(ctx, r)
	if err == nil && !redirectRegistered(ar) {
		err = errNotRegistered
	}
	if err != nil {
		return s.authorizeError(c, ar, err)
	}
	if bad := s.checkResponseMode(c, ar); bad != nil {
		return bad
	}
	switch r.PostForm.Get("decision") {
	case "allow":
	case "deny":
		return s.authorizeError(c, ar, fosite.ErrAccessDenied.WithHint("The user denied the request."))
	default:
		return s.errorPage(c, http.StatusBadRequest, "Bad request", "Choose Allow or Deny.")
	}
	scopes := requestedScopes(ar)
	if err := s.store.SaveConsent(ctx, u.ID, ar.GetClient().GetID(), scopes); err != nil {
		return err
	}
	return s.issueCode(c, ar, u, scopes)
}

// errNotRegistered refuses a redirect URI that fosite accepted without it
// being registered (see redirectRegistered).
var errNotRegistered = fosite.ErrInvalidRequest.WithHint("The 'redirect_uri' parameter does not match any of the app's registered redirect URIs exactly.")

// redirectRegistered reports whether ar has a redirect URI that the app
// registered, compared as strings with no normalisation. fosite accepts
// more for loopback addresses (any port, and whatever url.Parse makes
// equal: userinfo, scheme case, escapes), as RFC 8252 section 7.3 allows
// for native apps. Apps here are confidential clients with a secret, so
// the exception does not apply, and the README promises exact matching.
// An absent redirect_uri is fosite's choice of the app's only URI.
func redirectRegistered(ar fosite.AuthorizeRequester) bool {
	if ar == nil || ar.GetClient() == nil || !ar.IsRedirectURIValid() {
		return false
	}
	raw := ar.GetRequestForm().Get("redirect_uri")
	return raw == "" || slices.Contains(ar.GetClient().GetRedirectURIs(), raw)
}

// badParams refuses NUL and invalid UTF-8 in the authorization parameters
// (textinput) before fosite looks the app up with them. Without a
// validated app there is nowhere to redirect: the user gets the error page.
func badParams(v url.Values) string {
	if bad := textinput.BadValues(v); len(bad) > 0 {
		return fmt.Sprintf("The parameter %q %s.", bad[0], textinput.Message)
	}
	return ""
}

// requestedScopes are the scopes asked for; none means all the app's.
func requestedScopes(ar fosite.AuthorizeRequester) []string {
	if len(ar.GetRequestedScopes()) == 0 {
		ar.SetRequestedScopes(ar.GetClient().GetScopes())
	}
	return ar.GetRequestedScopes()
}

// checkResponseMode allows only the query response mode (the code flow's
// default): fragments and form_post are not offered.
func (s *Service) checkResponseMode(c echo.Context, ar fosite.AuthorizeRequester) error {
	switch ar.GetResponseMode() {
	case fosite.ResponseModeDefault, fosite.ResponseModeQuery:
		return nil
	}
	return s.authorizeError(c, ar, fosite.ErrUnsupportedResponseMode.WithHint("Only response_mode=query is supported."))
}

// issueCode grants the scopes, mints the code and redirects back to the app.
func (s *Service) issueCode(c echo.Context, ar fosite.AuthorizeRequester, u *users.User, scopes []string) error {
	ctx := c.Request().Context()
	for _, sc := range scopes {
		ar.GrantScope(sc)
	}
	sess := &fosite.DefaultSession{Subject: strconv.FormatInt(u.ID, 10), Username: u.Email}
	resp, err := s.provider.NewAuthorizeResponse(ctx, ar, sess)
	if err != nil {
		return s.authorizeError(c, ar, err)
	}
	return redirectWith(c, ar.GetRedirectURI(), resp.GetParameters())
}

// authorizeError answers a failed authorization request. Without a valid
// client and registered redirect URI it is an error page: we never
// redirect to a URI the app did not register. Otherwise the app gets the
// error at its redirect URI, with the state.
func (s *Service) authorizeError(c echo.Context, ar fosite.AuthorizeRequester, err error) error {
	var rfc *fosite.RFC6749Error
	if !errors.As(err, &rfc) {
		rfc = fosite.ErrServerError.WithWrap(err)
	}
	if db.IsUnavailable(err) {
		// fosite calls a failed app lookup an unknown app. Once the app
		// and its redirect URI are validated, the app hears of the
		// outage (RFC 6749 section 4.1.2.1); before, the user does.
		if !redirectRegistered(ar) {
			return s.unavailablePage(c, err)
		}
		s.logUnavailable(c.Request(), err)
		rfc = fosite.ErrTemporarilyUnavailable.WithHint("Retry later.")
	}
	if !redirectRegistered(ar) {
		// The person in the browser gets a sentence; the library's text,
		// which names parameters, is kept below it for the app's developer.
		msg, details := "The app sent a sign-in request this service cannot accept. Contact the app's developer.", rfc.GetDescription()
		switch {
		case ar == nil || ar.GetClient() == nil || rfc.ErrorField == fosite.ErrInvalidClient.ErrorField:
			msg, details = "This app is unknown. Check the client_id the app sent.", ""
		case ar.IsRedirectURIValid():
			// fosite took it for a registered loopback URI.
			msg, details = "The app asked to return to an address it has not registered.", errNotRegistered.GetDescription()
		case rfc.ErrorField == "invalid_request" && strings.Contains(strings.ToLower(details), "redirect"):
			msg = "The app asked to return to an address it has not registered."
		}
		return s.render(c, http.StatusBadRequest, "error", &page{Layout: web.Layout{Title: "Cannot authorize this app", Message: msg, Details: details}})
	}
	code := rfc.ErrorField
	if code == "server_error" {
		s.log.ErrorContext(c.Request().Context(), "oauth: authorize error", "error", rfc.Error(), "debug", rfc.Debug(), "cause", errString(rfc.Cause()))
	}
	if !authorizeErrorCodes[code] {
		code = "invalid_request"
	}
	q := url.Values{"error": {code}, "error_description": {rfc.GetDescription()}}
	if st := ar.GetState(); st != "" {
		q.Set("state", st)
	}
	return redirectWith(c, ar.GetRedirectURI(), q)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// redirectWith sends 302 to base with params added to its query.
func redirectWith(c echo.Context, base *url.URL, params url.Values) error {
	u := *base
	q := u.Query()
	for k, vs := range params {
		for _, v := range vs {
			q.Set(k, v)
		}
	}
	u.RawQuery = q.Encode()
	u.Fragment = ""
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	return c.Redirect(http.StatusFound, u.String())
}
