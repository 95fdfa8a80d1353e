package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/ory/fosite"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/oauth/store"
	"github.com/finsvc/finsvc/internal/ratelimit"
	"github.com/finsvc/finsvc/internal/textinput"
)

// tokenResponse is the token endpoint's success body (openapi
// TokenResponse).
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
}

// oauthError is the RFC 6749 error body.
type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// rfcCodes are the error codes the API document lists; anything else
// fosite produces is mapped onto one of them.
var rfcCodes = map[string]bool{
	"invalid_request": true, "invalid_client": true, "invalid_grant": true, "unauthorized_client": true,
	"unsupported_grant_type": true, "invalid_scope": true, "access_denied": true,
	"unsupported_token_type": true, "server_error": true, "temporarily_unavailable": true,
}

// jsonToForm lets the token and revoke endpoints take application/json
// bodies: fosite reads only forms, so a flat JSON object of strings is
// re-encoded as a form. Anything else in JSON is an invalid_request.
func jsonToForm(r *http.Request) *oauthError {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "application/json" {
		return nil
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return &oauthError{Error: "invalid_request", Description: "The request body could not be read."}
	}
	if len(textinput.BadJSON(raw)) > 0 {
		// Checked on the raw bytes: decoding would turn invalid UTF-8
		// into U+FFFD, which the form check after this could not see.
		return &oauthError{Error: "invalid_request", Description: "The parameters " + textinput.Message + "."}
	}
	var body map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil {
		return &oauthError{Error: "invalid_request", Description: "The request body is not a JSON object."}
	}
	form := url.Values{}
	for k, v := range body {
		switch v := v.(type) {
		case string:
			form.Set(k, v)
		case json.Number:
			form.Set(k, v.String())
		case nil:
		default:
			return &oauthError{Error: "invalid_request", Description: fmt.Sprintf("The parameter %q must be a string.", k)}
		}
	}
	enc := form.Encode()
	r.Body = http.NoBody
	if enc != "" {
		r.Body = readCloser{strings.NewReader(enc)}
	}
	r.ContentLength = int64(len(enc))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return nil
}

type readCloser struct{ *strings.Reader }

// badText refuses NUL and invalid UTF-8 in any parameter, the HTTP Basic
// client credentials included (textinput), before fosite looks the client
// or the token up with them.
func badText(r *http.Request) *oauthError {
	bad := textinput.BadValues(r.PostForm)
	if id, secret, ok := r.BasicAuth(); ok {
		// fosite reads the Basic credentials form-unescaped (RFC 6749
		// section 2.3.1): check both spellings.
		for _, v := range []string{id, secret} {
			u, err := url.QueryUnescape(v)
			if !textinput.Valid(v) || err == nil && !textinput.Valid(u) {
				bad = append(bad, "Authorization")
				break
			}
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return &oauthError{Error: "invalid_request", Description: fmt.Sprintf("The parameter %q %s.", bad[0], textinput.Message)}
}

func (readCloser) Close() error { return nil }

// handleToken is POST /api/oauth/token.
func (s *Service) handleToken(c echo.Context) error {
	r := c.Request()
	w := c.Response()
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	if e := jsonToForm(r); e != nil {
		return writeOAuthError(c, http.StatusBadRequest, *e)
	}
	if err := r.ParseForm(); err != nil {
		return writeOAuthError(c, http.StatusBadRequest, oauthError{"invalid_request", "The request body could not be parsed."})
	}
	if e := badText(r); e != nil {
		return writeOAuthError(c, http.StatusBadRequest, *e)
	}
	r = withClientMemo(c)
	// fosite answers invalid_request for a missing grant type and never
	// emits unsupported_grant_type; the spec wants the latter for both.
	// The spec (section 5.6) also gives unsupported_grant_type for a
	// missing required field of the grant: without it the request is no
	// grant we support. Client credentials are the exception: missing
	// ones are invalid_client, like wrong ones.
	switch gt := r.PostForm.Get("grant_type"); gt {
	case "authorization_code":
		for _, k := range []string{"code", "redirect_uri"} {
			if r.PostForm.Get(k) == "" {
				return writeOAuthError(c, http.StatusBadRequest, oauthError{"unsupported_grant_type", "The authorization_code grant needs the " + k + " parameter."})
			}
		}
	case "refresh_token":
		if r.PostForm.Get("refresh_token") == "" {
			return writeOAuthError(c, http.StatusBadRequest, oauthError{"unsupported_grant_type", "The refresh_token grant needs the refresh_token parameter."})
		}
	case "":
		return writeOAuthError(c, http.StatusBadRequest, oauthError{"unsupported_grant_type", "The grant_type parameter is missing; use authorization_code or refresh_token."})
	default:
		return writeOAuthError(c, http.StatusBadRequest, oauthError{"unsupported_grant_type", "Unsupported grant_type; use authorization_code or refresh_token."})
	}
	// fosite calls absent client credentials invalid_request; they are a
	// failed client authentication (RFC 6749 section 5.2).
	if _, _, basic := r.BasicAuth(); !basic && r.PostForm.Get("client_id") == "" {
		c.Response().Header().Set("WWW-Authenticate", `Basic realm="finsvc"`)
		return writeOAuthError(c, http.StatusUnauthorized, oauthError{"invalid_client", "Client authentication is required: send client_id and client_secret in the body or by HTTP Basic auth."})
	}
	if r.PostForm.Get("grant_type") == "refresh_token" {
		s.prefetchRefresh(r)
	}
	if done, err := s.chargeClient(c); done {
		return err
	}
	ctx := r.Context()
	ar, err := s.provider.NewAccessRequest(ctx, r, &fosite.DefaultSession{})
	if err != nil {
		s.revokeOnReuse(c, err)
		return s.writeFositeError(c, err, r)
	}
	resp, err := s.provider.NewAccessResponse(ctx, ar)
	if err != nil {
		s.revokeOnReuse(c, err)
		return s.writeFositeError(c, err, r)
	}
	out := tokenResponse{
		AccessToken: resp.GetAccessToken(),
		TokenType:   strings.ToLower(resp.GetTokenType()),
		Scope:       strings.Join(ar.GetGrantedScopes(), " "),
	}
	m := resp.ToMap()
	if rt, ok := m["refresh_token"].(string); ok {
		out.RefreshToken = rt
	}
	switch v := m["expires_in"].(type) {
	case int64:
		out.ExpiresIn = v
	case int:
		out.ExpiresIn = int64(v)
	case float64:
		out.ExpiresIn = int64(v)
	case string:
		out.ExpiresIn, _ = strconv.ParseInt(v, 10, 64)
	}
	return c.JSON(http.StatusOK, out)
}

// handleRevoke is POST /api/oauth/revoke (RFC 7009).
func (s *Service) handleRevoke(c echo.Context) error {
	r := c.Request()
	if e := jsonToForm(r); e != nil {
		return writeOAuthError(c, http.StatusBadRequest, *e)
	}
	if err := r.ParseForm(); err != nil {
		return writeOAuthError(c, http.StatusBadRequest, oauthError{"invalid_request", "The request body could not be parsed."})
	}
	if e := badText(r); e != nil {
		return writeOAuthError(c, http.StatusBadRequest, *e)
	}
	if _, _, basic := r.BasicAuth(); !basic && r.PostForm.Get("client_id") == "" {
		c.Response().Header().Set("WWW-Authenticate", `Basic realm="finsvc"`)
		return writeOAuthError(c, http.StatusUnauthorized, oauthError{"invalid_client", "Client authentication is required: send client_id and client_secret in the body or by HTTP Basic auth."})
	}
	if r.PostForm.Get("token") == "" {
		return writeOAuthError(c, http.StatusBadRequest, oauthError{"invalid_request", "The token parameter is required."})
	}
	r = withClientMemo(c)
	if done, err := s.chargeClient(c); done {
		return err
	}
	// One transaction for the whole revocation (the family's refresh
	// tokens, its access tokens) and its audit record: fosite revokes them
	// by separate calls.
	err := s.db.InTx(store.ForRevocation(r.Context()), func(ctx db.TxContext, _ *gorm.DB) error {
		return s.provider.NewRevocationRequest(ctx, r.WithContext(ctx))
	})
	if err == nil {
		// fosite answers nil for a token that is unknown or revoked
		// already (RFC 7009 section 2.2), having written nothing: the 200
		// then confirms a revocation this request did not write (an
		// earlier one, perhaps this client's own whose answer was lost),
		// so it is sent only once that revocation is durable, or a
		// failover could bring the token back after the 200. Which of the
		// two fosite did is not told; a revocation that wrote pays one
		// more round trip, and revocations are rare.
		err = s.db.WaitDurable(r.Context())
	}
	if err != nil {
		var rfc *fosite.RFC6749Error
		if errors.As(err, &rfc) {
			switch rfc.ErrorField {
			case "invalid_client", "invalid_request", "server_error":
				return s.writeFositeError(c, err, r)
			case "unsupported_token_type":
				return writeOAuthError(c, http.StatusBadRequest, oauthError{"unsupported_token_type", rfc.GetDescription()})
			}
		}
		// RFC 7009 section 2.2: an invalid, unknown or already revoked
		// token is not an error for the client (durable as above).
		if errors.Is(err, fosite.ErrNotFound) || errors.Is(err, fosite.ErrInactiveToken) {
			if err := s.db.WaitDurable(r.Context()); err != nil {
				return s.writeFositeError(c, err, r)
			}
			return c.NoContent(http.StatusOK)
		}
		return s.writeFositeError(c, err, r)
	}
	return c.NoContent(http.StatusOK)
}

// prefetchRefresh reads a refresh grant's client and token in one round
// trip into the request's memo (store.PrefetchRefresh), where the client
// authentication and the grant find them: three round trips per refresh
// instead of four. The client id is taken as fosite takes it (Basic auth,
// URL-encoded, else the form); anything odd is left to fosite to refuse.
func (s *Service) prefetchRefresh(r *http.Request) {
	id := r.PostForm.Get("client_id")
	if user, _, ok := r.BasicAuth(); ok {
		u, err := url.QueryUnescape(user)
		if err != nil {
			return
		}
		id = u
	}
	ctx := r.Context()
	s.store.PrefetchRefresh(ctx, id, s.strategy.RefreshTokenSignature(ctx, r.PostForm.Get("refresh_token")))
}

// withClientMemo makes the request load its client once
// (store.WithClientMemo) and returns it.
func withClientMemo(c echo.Context) *http.Request {
	r := c.Request().WithContext(store.WithClientMemo(c.Request().Context()))
	c.SetRequest(r)
	return r
}

// clientAuthenticated marks (in the echo context) a token or revocation
// request whose client authenticated.
const clientAuthenticated = "oauth.client_authenticated"

// limited charges a token or revocation request to the right budget: the
// client's tenant once its credentials are good (chargeClient), else the
// client address. Anything that does not authenticate a client (bogus
// credentials, none, a malformed request) spends the address's budget, and
// an address past it is refused before any work: a flood of them must not
// spend the tenant's budget and lock its real integrations out.
func (s *Service) limited(h echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := s.budget.GuardAddress(c, ratelimit.BudgetAuth); err != nil {
			return err
		}
		err := h(c)
		if c.Get(clientAuthenticated) == nil {
			// The answer is already written; a spent budget refuses the
			// address's next request (GuardAddress).
			_ = s.budget.ChargeAddress(c, ratelimit.BudgetAuth)
		}
		return err
	}
}

// chargeClient authenticates the request's client before any grant or
// revocation work, so that the tenant's budget is charged only for a client
// that authenticated. done reports that the answer has been written (or is
// err): bad credentials, an outage, or a spent budget. fosite authenticates
// the client again in the grant; the request's client memo
// (withClientMemo) answers that second lookup without a round trip.
func (s *Service) chargeClient(c echo.Context) (done bool, err error) {
	r := c.Request()
	if _, err := s.fosite.AuthenticateClient(r.Context(), r, r.PostForm); err != nil {
		return true, s.writeFositeError(c, err, r)
	}
	c.Set(clientAuthenticated, true)
	if err := s.budget.ChargeTenant(c, ratelimit.BudgetOAuth); err != nil {
		return true, err
	}
	return false, nil
}

// reused reports whether a token request failed because its code or
// refresh token had already been used: by an earlier request, or by a
// concurrent one that got there first (store.ErrAlreadyUsed, or fosite
// reading the code again outside the transaction).
func reused(err error) bool {
	return errors.Is(err, store.ErrAlreadyUsed) || errors.Is(err, fosite.ErrInvalidatedAuthorizeCode) || errors.Is(err, fosite.ErrInactiveToken)
}

// revokeOnReuse revokes the family of a code or refresh token presented
// more than once. fosite does so only when its first read already sees
// the code or token used; a request that loses the race later (at the
// conditional UPDATE) is rolled back without touching the family, and the
// winner's tokens would stay valid. Revoking here, after that rollback,
// covers every timing (RFC 6749 section 4.1.2, RFC 6819 section 5.2.2.3).
func (s *Service) revokeOnReuse(c echo.Context, err error) {
	if !reused(err) {
		return
	}
	r := c.Request()
	// A client that hangs up must not cancel the revocation.
	ctx := context.WithoutCancel(r.Context())
	var rerr error
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		rerr = s.store.RevokeFamilyOfCode(ctx, s.strategy.AuthorizeCodeSignature(ctx, r.PostForm.Get("code")))
	case "refresh_token":
		rerr = s.store.RevokeFamilyOfRefreshToken(ctx, s.strategy.RefreshTokenSignature(ctx, r.PostForm.Get("refresh_token")))
	default:
		return
	}
	if rerr != nil {
		s.log.ErrorContext(ctx, "oauth: revoke reused grant", "grant_type", r.PostForm.Get("grant_type"), "error", rerr)
		return
	}
	s.log.WarnContext(ctx, "oauth: code or refresh token presented again; its grant is revoked", "grant_type", r.PostForm.Get("grant_type"))
}

// writeFositeError renders a fosite error as an RFC 6749 body with a code
// from the API document's list. Server errors are logged (fosite's debug
// text names no token values) and answered without detail.
func (s *Service) writeFositeError(c echo.Context, err error, r *http.Request) error {
	var rfc *fosite.RFC6749Error
	if !errors.As(err, &rfc) {
		rfc = fosite.ErrServerError.WithWrap(err)
	}
	// fosite reports a failed client lookup as invalid_client whatever
	// the cause, and a failed token lookup at revocation as
	// temporarily_unavailable: an outage must not look like bad
	// credentials.
	// An unknown outcome (a lost COMMIT, a durability barrier that did not
	// complete) is answered the same way: nothing is confirmed, retry.
	if db.IsUnavailable(err) || db.IsOutcomeUnknown(err) || rfc.ErrorField == fosite.ErrTemporarilyUnavailable.ErrorField {
		s.logUnavailable(r, err)
		c.Response().Header().Set("Retry-After", retryAfterUnavailable)
		return writeOAuthError(c, http.StatusServiceUnavailable, oauthError{"temporarily_unavailable", "The service is temporarily unavailable; retry later."})
	}
	code := rfc.ErrorField
	status := rfc.CodeField
	desc := rfc.GetDescription()
	switch {
	case reused(err):
		// A concurrent request consumed the code or refresh token first
		// (fosite reads the code again outside the transaction, and
		// wraps what it finds as a server error).
		code, status, desc = "invalid_grant", http.StatusBadRequest, "The authorization code or refresh token was already used."
	case code == "invalid_client":
		status = http.StatusUnauthorized
		if _, _, basic := r.BasicAuth(); basic {
			c.Response().Header().Set("WWW-Authenticate", `Basic realm="finsvc"`)
		}
	case !rfcCodes[code]:
		// token_inactive, invalid_token (an expired code), … concern the
		// grant; other non-standard codes are malformed requests.
		switch code {
		case "token_inactive", "invalid_token", "token_signature_mismatch", "request_unauthorized", "not_found":
			code = "invalid_grant"
		default:
			code = "invalid_request"
		}
		status = http.StatusBadRequest
	}
	if code == "server_error" {
		s.log.ErrorContext(r.Context(), "oauth: server error", "path", r.URL.Path, "error", rfc.Error(), "debug", rfc.Debug(), "cause", fmt.Sprint(rfc.Cause()))
		status, desc = http.StatusInternalServerError, "The authorization server encountered an unexpected condition."
	}
	if status != http.StatusUnauthorized && status != http.StatusInternalServerError {
		status = http.StatusBadRequest
	}
	return writeOAuthError(c, status, oauthError{Error: code, Description: desc})
}

func writeOAuthError(c echo.Context, status int, e oauthError) error {
	c.Response().Header().Set("Cache-Control", "no-store")
	c.Response().Header().Set("Pragma", "no-cache")
	return c.JSON(status, e)
}

// logUnavailable logs what happened: the database's error, not the OAuth
// error fosite wrapped it in (which says invalid_client for any failed
// client lookup).
func (s *Service) logUnavailable(r *http.Request, err error) {
	for {
		var rfc *fosite.RFC6749Error
		if !errors.As(err, &rfc) || rfc.Cause() == nil {
			break
		}
		err = rfc.Cause()
	}
	s.log.ErrorContext(r.Context(), "oauth: database unavailable", "path", r.URL.Path, "error", err.Error())
}
