package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"reflect"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/idempotency"
)

// IdempotencyStore runs requests sent with an Idempotency-Key at most once
// (internal/idempotency).
type IdempotencyStore interface {
	Do(ctx context.Context, r idempotency.Request, run func(ctx context.Context) (idempotency.Result, idempotency.Disposition)) (idempotency.Outcome, *idempotency.Result, error)
}

// headerIdempotencyKey, headerReplayed and headerOriginalRequest are the
// spec's IdempotencyKey parameter and IdempotentReplayed and
// OriginalRequest headers.
const (
	headerIdempotencyKey  = "Idempotency-Key"
	headerReplayed        = "Idempotent-Replayed"
	headerOriginalRequest = "Original-Request"
)

// keyedRequest is what keyBody read of a POST with an Idempotency-Key.
type keyedRequest struct {
	key    string
	digest string
}

const keyedRequestKey = "finsvc.idempotency"

// keyBody reads the key and the body's digest of a POST under /api/1.0
// that carries an Idempotency-Key, for idempotent to use once the request
// is authorized. It runs after request validation, so a malformed key or
// body is a 400 that never reaches the key's store.
func keyBody(enabled bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			key := req.Header.Get(headerIdempotencyKey)
			if !enabled || key == "" || req.Method != http.MethodPost || !isAPI(c) {
				return next(c)
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				return err
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			c.Set(keyedRequestKey, keyedRequest{key: key, digest: idempotency.Digest(canonicalBody(req.URL.RawQuery, body))})
			return next(c)
		}
	}
}

// idempotent is the strict middleware that makes a keyed POST safe to
// retry (the rule is the spec's IdempotencyKey parameter; the guarantees
// are internal/idempotency's). It must run inside the authorizer: a stored
// response is only replayed to a caller the operation admits, exactly as a
// fresh request would be, and the key is the caller's own (tenant, app and
// user).
//
// The handler runs in the key's transaction; its response is rendered here,
// kept with the key in the same commit, and then sent. What is kept: a 2xx
// with its effects; a 4xx of the handler's rules without effects (a retry
// gets the same answer); nothing for a 5xx, whose error leaves through the
// error handler as any other.
func idempotent(store IdempotencyStore) apiserver.StrictMiddlewareFunc {
	return func(next apiserver.StrictHandlerFunc, operationID string) apiserver.StrictHandlerFunc {
		if store == nil {
			return next
		}
		visit := "Visit" + operationID + "Response"
		return func(c echo.Context, request any) (any, error) {
			k, ok := c.Get(keyedRequestKey).(keyedRequest)
			if !ok {
				return next(c, request)
			}
			p, ok := auth.FromContext(c.Request().Context())
			if !ok {
				return nil, apperr.E(apperr.Unauthenticated, "authentication required")
			}
			req := c.Request()
			r := idempotency.Request{
				TenantID: p.TenantID, ClientID: p.ClientID, UserID: p.UserID, Key: k.key,
				Method: req.Method, Path: req.URL.Path, Digest: k.digest, RequestID: RequestIDOf(c),
			}
			var (
				runErr  error       // a failure that decided nothing
				headers http.Header // a fresh response's headers
			)
			outcome, res, err := store.Do(req.Context(), r, func(ctx context.Context) (idempotency.Result, idempotency.Disposition) {
				c.SetRequest(req.WithContext(ctx))
				defer c.SetRequest(req)
				response, err := next(c, request)
				if err != nil {
					if Status(err) >= 500 {
						runErr = err
						return idempotency.Result{}, idempotency.Forget
					}
					return errorResult(err), idempotency.KeepResult
				}
				rec := &responseRecorder{header: http.Header{}}
				if err := render(response, visit, rec); err != nil {
					runErr = err
					return idempotency.Result{}, idempotency.Forget
				}
				headers = rec.header
				res := idempotency.Result{Status: rec.status, ContentType: rec.header.Get(echo.HeaderContentType),
					Location: rec.header.Get(echo.HeaderLocation), Body: rec.body.Bytes()}
				switch {
				case rec.status >= 500:
					return res, idempotency.Forget
				case rec.status >= 400:
					return res, idempotency.KeepResult
				}
				return res, idempotency.Commit
			})
			switch {
			case err != nil:
				return nil, err
			case runErr != nil:
				return nil, runErr
			}
			switch outcome {
			case idempotency.InFlight:
				return nil, apperr.E(apperr.Conflict, "a request with this Idempotency-Key is still running; retry it later").
					WithCode(apperr.CodeIdempotencyInFlight).
					WithField("idempotency_key", "the first request with this key has not finished")
			case idempotency.Mismatch:
				return nil, apperr.E(apperr.Unprocessable, "this Idempotency-Key was used for a different request").
					WithCode(apperr.CodeIdempotencyMismatch).
					WithField("idempotency_key", "already used with another path or body; send a new key for a new request")
			case idempotency.Replayed:
				return nil, send(c, res, nil, true)
			}
			return nil, send(c, res, headers, false)
		}
	}
}

// render writes response, a strict handler's response object, to w with
// its generated Visit<Operation>Response method.
func render(response any, visit string, w http.ResponseWriter) error {
	if response == nil {
		return apperr.E(apperr.Internal, "httpapi: the handler returned no response")
	}
	m := reflect.ValueOf(response).MethodByName(visit)
	if !m.IsValid() {
		return apperr.Ef(apperr.Internal, "httpapi: %T has no %s", response, visit)
	}
	out := m.Call([]reflect.Value{reflect.ValueOf(w)})
	if err, _ := out[0].Interface().(error); err != nil {
		return err
	}
	return nil
}

// errorResult is a 4xx as the error handler writes it.
func errorResult(err error) idempotency.Result {
	b, _ := json.Marshal(Body(err))
	return idempotency.Result{Status: Status(err), ContentType: echo.MIMEApplicationJSON, Body: append(b, '\n')}
}

// send writes res: a fresh response with the headers its handler set, a
// replay with the stored ones and the marks of a replay.
func send(c echo.Context, res *idempotency.Result, headers http.Header, replayed bool) error {
	h := c.Response().Header()
	for k, v := range headers {
		h[k] = v
	}
	if res.Location != "" {
		h.Set(echo.HeaderLocation, res.Location)
	}
	if replayed {
		h.Set(headerReplayed, "true")
		if res.RequestID != "" {
			h.Set(headerOriginalRequest, res.RequestID)
		}
	}
	return c.Blob(res.Status, res.ContentType, res.Body)
}

// responseRecorder keeps a rendered response.
type responseRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *responseRecorder) Header() http.Header { return r.header }

func (r *responseRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *responseRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

// canonicalBody is what a retry must repeat: the query and the JSON body
// with its object keys sorted, its insignificant whitespace dropped and its
// numbers compared by value (250000.00 is 250000: amounts are exact
// decimals), so that a client re-serialising the same values is still the
// same request. A body that is not JSON is compared as sent.
func canonicalBody(query string, body []byte) []byte {
	out := append([]byte(query), '\n')
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return append(out, body...)
	}
	b, err := json.Marshal(numbersByValue(v))
	if err != nil {
		return append(out, body...)
	}
	return append(out, b...)
}

// numbersByValue replaces every number with its exact value as a
// fraction, under a key no request can hold (request bodies never contain
// NUL: textGuard refuses them), so that it cannot equal a string.
func numbersByValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		r, ok := new(big.Rat).SetString(string(x))
		if !ok {
			return map[string]any{"\x00n": string(x)}
		}
		return map[string]any{"\x00n": r.RatString()}
	case map[string]any:
		for k, e := range x {
			x[k] = numbersByValue(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbersByValue(e)
		}
	}
	return v
}
