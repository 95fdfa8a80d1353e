// Package apperr defines the domain error kinds shared by every store and
// handler. HTTP status mapping lives in exactly one place (internal/httpapi), in the
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
	// Code, when set, names the cause more precisely than Kind (a
	// duplicate among the conflicts); otherwise the kind's code is sent.
	Code Code
}

// Code is the machine-readable cause of an error, sent as the error body's
// `code`. Clients decide on it whether to retry, so each value names one
// cause with one answer to "retry?" (the spec's ErrorCode lists them).
type Code string

// Codes. The kind's own codes are sent when an error names none.
const (
	CodeValidationFailed    Code = "validation_failed"     // 400: the request breaks a rule; fix it
	CodeUnauthenticated     Code = "unauthenticated"       // 401
	CodeForbidden           Code = "forbidden"             // 403
	CodeNotFound            Code = "not_found"             // 404
	CodeMethodNotAllowed    Code = "method_not_allowed"    // 405
	CodeConflict            Code = "conflict"              // 409: the resource's state forbids it
	CodeDuplicate           Code = "duplicate"             // 409: it exists already
	CodeFetchConflict       Code = "fetch_conflict"        // 409: a fetch result is stale or differs
	CodeIdempotencyInFlight Code = "idempotency_in_flight" // 409: retry later with the same key
	CodePayloadTooLarge     Code = "payload_too_large"     // 413
	CodeUnsupportedMedia    Code = "unsupported_media_type"
	CodeUnprocessable       Code = "unprocessable"        // 422: values fail validation
	CodeIdempotencyMismatch Code = "idempotency_mismatch" // 422: the key was used for another request
	CodeRateLimited         Code = "rate_limited"         // 429: retry after Retry-After
	CodeInternal            Code = "internal"             // 500: retry with backoff
	CodeNotImplemented      Code = "not_implemented"      // 501
	CodeUnavailable         Code = "unavailable"          // 503: nothing decided; retry after Retry-After
	// 503: the request may have been applied; retry with the same
	// Idempotency-Key, which tells.
	CodeOutcomeUnknown Code = "outcome_unknown"
)

// Codes lists every Code, for the check against the spec's enumeration.
var Codes = []Code{
	CodeValidationFailed, CodeUnauthenticated, CodeForbidden, CodeNotFound, CodeMethodNotAllowed,
	CodeConflict, CodeDuplicate, CodeFetchConflict, CodeIdempotencyInFlight, CodePayloadTooLarge,
	CodeUnsupportedMedia, CodeUnprocessable, CodeIdempotencyMismatch, CodeRateLimited, CodeInternal,
	CodeNotImplemented, CodeUnavailable, CodeOutcomeUnknown,
}

// KindCode is the code of each kind, sent when an error names none.
var KindCode = map[Kind]Code{
	Invalid:         CodeValidationFailed,
	Unauthenticated: CodeUnauthenticated,
	Forbidden:       CodeForbidden,
	NotFound:        CodeNotFound,
	Conflict:        CodeConflict,
	Unprocessable:   CodeUnprocessable,
	TooManyRequests: CodeRateLimited,
	NotImplemented:  CodeNotImplemented,
	Internal:        CodeInternal,
}

// WithCode names the error's cause and returns the error for chaining.
func (e *Error) WithCode(c Code) *Error {
	e.Code = c
	return e
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
