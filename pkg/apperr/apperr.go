// Package apperr defines the domain error kinds shared by every store and
// handler. HTTP status mapping lives in exactly one place (pkg/httpapi), in the
// style of benbjohnson/wtf: domain code never imports net/http statuses.
package apperr

import (
	"errors"
	"fmt"
)

// Kind classifies a domain error.
type Kind string

const (
	Invalid         Kind = "invalid"           // 400: validation failure or business rule violation
	Unauthenticated Kind = "unauthenticated"   // 401
	Forbidden       Kind = "forbidden"         // 403
	NotFound        Kind = "not_found"         // 404 (also other tenants' resources)
	Conflict        Kind = "conflict"          // 409
	Unprocessable   Kind = "unprocessable"     // 422
	TooManyRequests Kind = "too_many_requests" // 429
	NotImplemented  Kind = "not_implemented"   // 501
	Internal        Kind = "internal"          // 500
)

// Error is a domain error with an optional field-level message map, rendered
// as the spec's error body {message, errors}.
type Error struct {
	Kind    Kind
	Message string
	Fields  map[string][]string
	Err     error // wrapped cause, never shown to clients
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Kind, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// E builds an error of the given kind.
func E(kind Kind, msg string) *Error { return &Error{Kind: kind, Message: msg} }

// Ef builds an error of the given kind with a formatted message.
func Ef(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// WithField adds a field-level message and returns the error for chaining.
func (e *Error) WithField(field, msg string) *Error {
	if e.Fields == nil {
		e.Fields = map[string][]string{}
	}
	e.Fields[field] = append(e.Fields[field], msg)
	return e
}

// FieldErrors is a builder for field-level validation messages.
type FieldErrors map[string][]string

// Add records a message for a field.
func (f FieldErrors) Add(field, msg string) { f[field] = append(f[field], msg) }

// Err returns nil when no messages were recorded, else an error of kind.
func (f FieldErrors) Err(kind Kind, msg string) error {
	if len(f) == 0 {
		return nil
	}
	return &Error{Kind: kind, Message: msg, Fields: map[string][]string(f)}
}

// KindOf reports the kind of err; errors that are not *Error are Internal.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// Is reports whether err is a domain error of kind k.
func Is(err error, k Kind) bool { return err != nil && KindOf(err) == k }

// Wrap annotates err with context, pkgsite derrors.Wrap style:
//
//	defer apperr.Wrap(&err, "clients.Get(%d)", id)
func Wrap(errp *error, format string, args ...any) {
	if *errp == nil {
		return
	}
	var e *Error
	if errors.As(*errp, &e) {
		return // domain errors keep their client-facing message unchanged
	}
	*errp = fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), *errp)
}
