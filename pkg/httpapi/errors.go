package httpapi

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/pkg/apperr"
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

// Status returns the HTTP status for err.
func Status(err error) int {
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
	default:
		body.Message = "internal error"
	}
	return body
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
				"request_id", c.Response().Header().Get(headerRequestID),
				"method", c.Request().Method, "path", c.Path(), "error", err)
		}
		if status == http.StatusUnauthorized {
			c.Response().Header().Set("WWW-Authenticate", wwwAuthenticate(c))
		}
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(status)
			return
		}
		_ = c.JSON(status, Body(err))
	}
}

func wwwAuthenticate(c echo.Context) string {
	if c.Request().Header.Get(echo.HeaderAuthorization) == "" {
		return `Bearer realm="finsvc"`
	}
	return `Bearer realm="finsvc", error="invalid_token"`
}
