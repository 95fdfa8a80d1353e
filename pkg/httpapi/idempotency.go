package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/big"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/pkg/apperr"
	"github.com/finsvc/finsvc/pkg/auth"
	"github.com/finsvc/finsvc/pkg/idempotency"
)

// IdempotencyStore keeps the results of requests sent with an
// Idempotency-Key (pkg/idempotency).
type IdempotencyStore interface {
	Begin(ctx context.Context, r idempotency.Request) (idempotency.Outcome, *idempotency.Result, error)
	Finish(ctx context.Context, r idempotency.Request, res idempotency.Result) error
	Release(ctx context.Context, r idempotency.Request) error
}

// headerIdempotencyKey and headerReplayed are the spec's IdempotencyKey
// parameter and IdempotentReplayed header.
const (
	headerIdempotencyKey = "Idempotency-Key"
	headerReplayed       = "Idempotent-Replayed"
)

// idempotent makes a POST under /api/1.0 that carries an Idempotency-Key
// safe to retry (the rule is the spec's IdempotencyKey parameter): the
// first successful result is stored and replayed, byte for byte, to a
// retry with the same key, path and body. It runs after authentication
// (a key belongs to the tenant and the OAuth app) and after request
// validation (a malformed key or body is a 400 that stores nothing).
func idempotent(store IdempotencyStore, log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			key := req.Header.Get(headerIdempotencyKey)
			if store == nil || key == "" || req.Method != http.MethodPost || !isAPI(c) {
				return next(c)
			}
			p, ok := auth.FromContext(req.Context())
			if !ok {
				return next(c)
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				return err
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			r := idempotency.Request{
				TenantID: p.TenantID, ClientID: p.ClientID, Key: key, Method: req.Method, Path: req.URL.Path,
				Digest: idempotency.Digest(canonicalBody(req.URL.RawQuery, body)),
			}
			// The stored result must survive the caller hanging up: that is
			// exactly when it will retry.
			bg := context.WithoutCancel(req.Context())
			outcome, stored, err := store.Begin(bg, r)
			if err != nil {
				return err
			}
			switch outcome {
			case idempotency.Replay:
				return replay(c, stored)
			case idempotency.Running:
				return apperr.E(apperr.Conflict, "a request with this Idempotency-Key is still running; retry it later").
					WithField("idempotency_key", "the first request with this key has not finished")
			case idempotency.Mismatch:
				return apperr.E(apperr.Unprocessable, "this Idempotency-Key was used for a different request").
					WithField("idempotency_key", "already used with another path or body; send a new key for a new request")
			}

			rec := &recorder{ResponseWriter: c.Response().Writer}
			c.Response().Writer = rec
			kept := false
			defer func() {
				if !kept {
					// An error, a failure status or a panic: nothing is
					// stored, and a retry runs again.
					_ = store.Release(bg, r)
				}
			}()
			if err := next(c); err != nil {
				return err
			}
			res := c.Response()
			if res.Status < 200 || res.Status > 299 {
				return nil
			}
			if err := store.Finish(bg, r, idempotency.Result{
				Status: res.Status, ContentType: res.Header().Get(echo.HeaderContentType),
				Location: res.Header().Get(echo.HeaderLocation), Body: rec.body.Bytes(),
			}); err != nil {
				// The request's effect is committed and its response sent
				// already; a retry within the lease gets 409, after it runs
				// again. Logged for the operator.
				log.ErrorContext(req.Context(), "idempotency: storing the result failed", "error", err)
				return nil
			}
			kept = true
			return nil
		}
	}
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

func replay(c echo.Context, res *idempotency.Result) error {
	h := c.Response().Header()
	if res.ContentType != "" {
		h.Set(echo.HeaderContentType, res.ContentType)
	}
	if res.Location != "" {
		h.Set(echo.HeaderLocation, res.Location)
	}
	h.Set(headerReplayed, "true")
	return c.Blob(res.Status, res.ContentType, res.Body)
}

// recorder keeps a copy of the response body as it is written.
type recorder struct {
	http.ResponseWriter
	body bytes.Buffer
}

func (r *recorder) Write(b []byte) (int, error) {
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
