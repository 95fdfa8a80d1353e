package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/web"
)

// statusOf is the one mapping from domain error kinds to HTTP statuses.
var statusOf = map[apperr.Kind]int{
	apperr.Invalid:         http.StatusBadRequest,
	apperr.Unauthenticated: http.StatusUnauthorized,
	apperr.Forbidden:       http.StatusForbidden,
	apperr.NotFound:        http.StatusNotFound,
	apperr.Conflict:        http.StatusConflict,
	apperr.Unprocessable:   http.StatusUnprocessableEntity,
	apperr.TooManyRequests: http.StatusTooManyRequests,
	apperr.NotImplemented:  http.StatusNotImplemented,
	apperr.Internal:        http.StatusInternalServerError,
}

// retryAfterUnavailable is the Retry-After of a 503: a database that went
// away is usually back (failover, pooler restart) within seconds.
const retryAfterUnavailable = "2"

// retryAfterInFlight is the Retry-After of a 409 for an Idempotency-Key
// whose first request is still running: most requests finish within a
// second.
const retryAfterInFlight = "1"

// Status returns the HTTP status for err. A database that cannot be reached
// (db.IsUnavailable) is 503 whatever the operation, never a 500 or a
// misleading "not found"; so is a write whose outcome is unknown
// (db.IsOutcomeUnknown: its own code tells the client that the retry with
// its Idempotency-Key decides).
func Status(err error) int {
	if !isDomain(err) && (db.IsOutcomeUnknown(err) || db.IsUnavailable(err)) {
		return http.StatusServiceUnavailable
	}
	var he *echo.HTTPError
	if errors.As(err, &he) && !isDomain(err) {
		return he.Code
	}
	return statusOf[apperr.KindOf(err)]
}

func isDomain(err error) bool {
	var e *apperr.Error
	return errors.As(err, &e)
}

// Body renders err as the spec's error body. Internal errors never show their
// cause to the client; it is logged with the request id instead.
func Body(err error) models.Error {
	body := models.Error{Errors: map[string][]string{}}
	code := codeOf(err)
	body.Code = models.ErrorCode(code)
	var de *apperr.Error
	var he *echo.HTTPError
	switch {
	case errors.As(err, &de):
		if de.Kind == apperr.Internal {
			body.Message = "internal error"
			return body
		}
		body.Message = de.Message
		for k, v := range de.Fields {
			body.Errors[k] = v
		}
	case errors.As(err, &he):
		body.Message = http.StatusText(he.Code)
		if m, ok := he.Message.(string); ok && m != "" && he.Code < 500 {
			body.Message = m
		}
		if he.Code == http.StatusRequestEntityTooLarge {
			body.Message = "request body too large"
		}
	case db.IsOutcomeUnknown(err):
		body.Message = "The outcome of the request is unknown: it may have been applied. Retry it with the same Idempotency-Key, whose answer tells."
	default:
		body.Message = "internal error"
		if db.IsUnavailable(err) {
			body.Message = "The service is temporarily unavailable; retry later."
		}
	}
	return body
}

// statusCode is the code of an error known only by its status (echo's:
// no route, a body too large, …).
var statusCode = map[int]apperr.Code{
	http.StatusBadRequest:            apperr.CodeValidationFailed,
	http.StatusUnauthorized:          apperr.CodeUnauthenticated,
	http.StatusForbidden:             apperr.CodeForbidden,
	http.StatusNotFound:              apperr.CodeNotFound,
	http.StatusMethodNotAllowed:      apperr.CodeMethodNotAllowed,
	http.StatusConflict:              apperr.CodeConflict,
	http.StatusRequestEntityTooLarge: apperr.CodePayloadTooLarge,
	http.StatusUnsupportedMediaType:  apperr.CodeUnsupportedMedia,
	http.StatusUnprocessableEntity:   apperr.CodeUnprocessable,
	http.StatusTooManyRequests:       apperr.CodeRateLimited,
	http.StatusNotImplemented:        apperr.CodeNotImplemented,
	http.StatusServiceUnavailable:    apperr.CodeUnavailable,
}

// codeOf is err's machine-readable code: the one it names, else its
// kind's, else its status's.
func codeOf(err error) apperr.Code {
	var de *apperr.Error
	if errors.As(err, &de) {
		if de.Code != "" {
			return de.Code
		}
		return apperr.KindCode[de.Kind]
	}
	if db.IsOutcomeUnknown(err) {
		return apperr.CodeOutcomeUnknown
	}
	if c, ok := statusCode[Status(err)]; ok {
		return c
	}
	if Status(err) < 500 {
		return apperr.CodeValidationFailed
	}
	return apperr.CodeInternal
}

// errorHandler is echo's HTTPErrorHandler: every error of every route below
// a tenant leaves through here, in the error format.
func errorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		status := Status(err)
		if status >= 500 {
			log.ErrorContext(c.Request().Context(), "request failed",
				"request_id", RequestIDOf(c),
				"method", c.Request().Method, "path", c.Path(), "error", err)
		}
		oauth := isOAuthEndpoint(c.Request())
		if status == http.StatusUnauthorized {
			c.Response().Header().Set("WWW-Authenticate", wwwAuthenticate(c))
		}
		if status == http.StatusServiceUnavailable {
			c.Response().Header().Set("Retry-After", retryAfterUnavailable)
		}
		if codeOf(err) == apperr.CodeIdempotencyInFlight {
			c.Response().Header().Set("Retry-After", retryAfterInFlight)
		}
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(status)
			return
		}
		if oauth {
			writeOAuthError(c, status, err)
			return
		}
		if status == http.StatusServiceUnavailable && !strings.HasPrefix(c.Request().URL.Path, "/api/") {
			// The sign-in and authorization pages are for browsers.
			_ = c.HTML(status, unavailablePage)
			return
		}
		if status < 500 && !strings.HasPrefix(c.Request().URL.Path, "/api/") && web.WantsHTML(c.Request()) {
			// A browser at the tenant root, an unknown page or an unknown
			// host gets a page; API clients (no text/html in Accept) keep
			// the error format.
			_ = web.WriteError(c.Response(), status, browserError(c, status, err))
			return
		}
		_ = c.JSON(status, Body(err))
	}
}

// isOAuthEndpoint reports a request to the token or revocation endpoint
// (internal/oauth): their errors are RFC 6749's, also the ones given before
// their handlers run (unknown host, body limit, rate limit, outage, panic).
func isOAuthEndpoint(r *http.Request) bool {
	return r.Method == http.MethodPost && (r.URL.Path == "/api/oauth/token" || r.URL.Path == "/api/oauth/revoke")
}

// writeOAuthError answers err at an OAuth endpoint in RFC 6749's error
// format (section 5.2), uncached like every token response (section 5.1).
// A 413 and a 429 also carry the error format's fields, which the 1.0.0
// contract declared for them; RFC 6749 clients ignore members they do not
// know.
func writeOAuthError(c echo.Context, status int, err error) {
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	b := Body(err)
	code, desc := "invalid_request", b.Message
	switch {
	case status == http.StatusUnauthorized:
		code = "invalid_client"
		h.Set("WWW-Authenticate", `Basic realm="finsvc"`)
	case status == http.StatusTooManyRequests:
		code = "temporarily_unavailable"
	case status == http.StatusServiceUnavailable:
		code, desc = "temporarily_unavailable", "The service is temporarily unavailable; retry later."
	case status >= 500:
		code, desc = "server_error", "The service met an unexpected condition; retry later."
	}
	out := map[string]any{"error": code, "error_description": desc}
	if status == http.StatusRequestEntityTooLarge || status == http.StatusTooManyRequests {
		out["message"], out["code"], out["errors"] = b.Message, b.Code, b.Errors
	}
	_ = c.JSON(status, out)
}

// browserError is the page a browser sees for an error outside the API.
func browserError(c echo.Context, status int, err error) web.Layout {
	d := web.Layout{Title: http.StatusText(status), Message: Body(err).Message}
	if t, ok := tenant.FromContext(c.Request().Context()); ok {
		d.Tenant = t.Slug
	}
	switch {
	case status == http.StatusNotFound && d.Tenant == "":
		// "/" of this host is this page again: the way on is the
		// service's reference, which answers on any host.
		d.Title, d.Message = "Unknown address", "No organization is served at this address. Check the link you followed: an organization's address starts with its name."
		d.Home, d.HomeLabel = "/docs", "Go to the finsvc API reference"
	case status == http.StatusNotFound:
		d.Title, d.Message = "Page not found", "There is no page at this address."
	}
	return d
}

func wwwAuthenticate(c echo.Context) string {
	if c.Request().Header.Get(echo.HeaderAuthorization) == "" {
		return `Bearer realm="finsvc"`
	}
	return `Bearer realm="finsvc", error="invalid_token"`
}

// unavailablePage is what a browser sees when the database cannot be reached
// before a page's own handler runs (tenant resolution); the pages' handlers
// render their own, styled, version of it.
const unavailablePage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Service unavailable</title></head>
<body><h1>Service unavailable</h1><p>The service is temporarily unavailable. Try again in a few moments.</p></body></html>
`
