package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/labstack/echo/v4"
	oapimw "github.com/oapi-codegen/echo-middleware"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/textinput"
	"github.com/finsvc/finsvc/openapi"
)

func init() {
	// The spec marks ids as format: uuid; kin-openapi only checks formats it
	// knows, so register it once for the process (it is global in kin).
	openapi3.DefineStringFormatValidator("uuid", openapi3.NewRegexpFormatValidator(openapi3.FormatOfStringForUUIDOfRFC9562))
}

// Spec returns a fresh copy of the embedded OpenAPI document.
func Spec() (*openapi3.T, error) {
	spec, err := openapi.Load()
	if err != nil {
		return nil, err
	}
	// Tenant hosts are resolved by our own middleware, not matched against
	// the servers entry.
	spec.Servers = nil
	return spec, nil
}

// sharedSpec is Spec parsed once per process for New's read-only uses,
// and validatorSpec the validator's copy with its adjusted bounds (a test
// binary builds hundreds of servers; none of them changes these).
var (
	sharedSpec    = sync.OnceValues(Spec)
	validatorSpec = sync.OnceValues(func() (*openapi3.T, error) {
		spec, err := Spec()
		if err != nil {
			return nil, err
		}
		exactBoundsOnly(spec)
		return spec, nil
	})
)

// unprocessableRoutes are the correlated-data writes, where a well-formed
// body whose values break a constraint (an over-long error, …) is a 422, as
// the contract asks, rather than a 400.
var unprocessableRoutes = map[string]bool{
	"/api/1.0/acts/:act_uuid/data":          true,
	"/api/1.0/acts/:act_uuid/data/:data_id": true,
}

// validationError is what the validator found, before it becomes a status.
type validationError struct {
	fields     apperr.FieldErrors
	structural bool // a type, required, unknown-property or parse failure
}

func (v *validationError) Error() string { return "request validation failed" }

// requestValidator validates every /api/1.0 request against the embedded
// spec (kin-openapi through oapi-codegen's echo middleware's validation,
// with the route echo matched: routedValidator) and renders
// failures as the error body with field-level messages. It is built once
// per process (it holds nothing of one server's).
var requestValidator = sync.OnceValues(newRequestValidator)

func newRequestValidator() (echo.MiddlewareFunc, error) {
	spec, err := validatorSpec()
	if err != nil {
		return nil, err
	}
	opts := &oapimw.Options{
		DoNotValidateServers: true,
		Skipper:              func(c echo.Context) bool { return !isAPI(c) },
		Options: openapi3filter.Options{
			MultiError:         true,
			KeepValidatedValue: true,
			// Authentication already happened in bearerAuth; scopes are
			// enforced together with roles after validation (authorize.go).
			AuthenticationFunc: func(context.Context, *openapi3filter.AuthenticationInput) error { return nil },
		},
		MultiErrorHandler: func(me openapi3.MultiError) *echo.HTTPError {
			v := &validationError{fields: apperr.FieldErrors{}}
			collect(v, me)
			return &echo.HTTPError{Code: http.StatusBadRequest, Internal: v}
		},
		ErrorHandler: func(c echo.Context, he *echo.HTTPError) error {
			var v *validationError
			if !errors.As(he.Internal, &v) {
				// Route-level failures (404, 405) keep their status.
				return he
			}
			return v.asError(c)
		},
	}
	return routedValidator(spec, opts)
}

// routedValidator is oapi-codegen's request validator without its router
// lookup per request: echo has already matched the route (c.Path(), e.g.
// /api/1.0/clients/:id, and c.ParamValues()), so the spec operation is taken
// from a map built once from the same document (the spelling of
// deprecation.go's echoPath). A request echo did not
// match to an operation (the group's not-found route, a method the path
// lacks) goes through the validator's own router as before, which answers
// 404 or 405.
func routedValidator(spec *openapi3.T, opts *oapimw.Options) (echo.MiddlewareFunc, error) {
	router, err := gorillamux.NewRouter(spec)
	if err != nil {
		return nil, err
	}
	routes := specRoutes(spec)
	traps := nullTraps(routes)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if opts.Skipper(c) {
				return next(c)
			}
			r := router
			if route := routes[c.Request().Method][c.Path()]; route != nil {
				if err := acceptedMediaType(c.Request(), route.Operation); err != nil {
					return err
				}
				r = &matched{route: route, names: c.ParamNames(), values: c.ParamValues()}
				if body := traps[route]; body != nil {
					if err := refuseNullDefaults(c, body); err != nil {
						return err
					}
				}
			}
			if err := oapimw.ValidateRequestFromContext(c, r, opts); err != nil {
				return opts.ErrorHandler(c, err)
			}
			return next(c)
		}
	}, nil
}

// acceptedMediaType refuses a body whose Content-Type the operation does not
// declare with 415 (RFC 9110, section 15.5.16), in the error format, where
// the validator would call it a malformed request (400). A request that
// names no type is left to the validator.
func acceptedMediaType(r *http.Request, op *openapi3.Operation) error {
	ct := r.Header.Get(echo.HeaderContentType)
	if ct == "" || op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil && op.RequestBody.Value.Content.Get(mt) != nil {
		return nil
	}
	accepted := slices.Sorted(maps.Keys(op.RequestBody.Value.Content))
	return echo.NewHTTPError(http.StatusUnsupportedMediaType,
		"Content-Type "+strconv.Quote(ct)+" is not accepted here; send "+strings.Join(accepted, " or "))
}

// specRoutes maps method → echo pattern → the spec's operation.
func specRoutes(spec *openapi3.T) map[string]map[string]*routers.Route {
	routes := map[string]map[string]*routers.Route{}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			if routes[method] == nil {
				routes[method] = map[string]*routers.Route{}
			}
			// The validator's copy of the operation has no security
			// requirements: bearerAuth has authenticated and the authorizer
			// checks scopes, so walking them again (to a no-op
			// AuthenticationFunc) was cost without a check.
			unsecured := *op
			unsecured.Security = &openapi3.SecurityRequirements{}
			routes[method][echoPath(path)] = &routers.Route{Spec: spec, Path: path, PathItem: item, Method: method, Operation: &unsecured}
		}
	}
	return routes
}

// matched is the route echo found, as the router the validator asks.
type matched struct {
	route         *routers.Route
	names, values []string
}

func (m *matched) FindRoute(*http.Request) (*routers.Route, map[string]string, error) {
	params := make(map[string]string, len(m.names))
	for i, n := range m.names {
		if i < len(m.values) {
			params[n] = m.values[i]
		}
	}
	return m.route, params, nil
}

// exactBoundsOnly drops the published `maximum` of the money fields from the
// validator's copy of the document: kin-openapi compares it in float64, where
// 999999999999999999.99 is 1e18, and would answer with "at most 1e+18". The
// exact bound and its message are the domain's (clients.MaxCreditLimit).
func exactBoundsOnly(spec *openapi3.T) {
	for _, name := range []string{"ClientCreate", "ClientUpdate"} {
		if s := spec.Components.Schemas[name]; s != nil && s.Value != nil {
			if p := s.Value.Properties["credit_limit"]; p != nil && p.Value != nil {
				p.Value.Max = nil
			}
		}
	}
}

// asError is the failure as the client sees it: 400, or 422 for a
// well-formed body whose values break a constraint on the routes that ask
// for it.
func (v *validationError) asError(c echo.Context) error {
	kind, msg := apperr.Invalid, "The request is invalid."
	if !v.structural && unprocessableRoutes[c.Path()] {
		kind, msg = apperr.Unprocessable, "The data is invalid; nothing was applied."
	}
	return &apperr.Error{Kind: kind, Message: msg, Fields: map[string][]string(v.fields)}
}

// textGuard refuses NUL characters and invalid UTF-8 in every query
// parameter and every string (member names included) of a JSON body
// (textinput). It runs before the schema validation, which could not see
// them: encoding/json turns invalid bytes into U+FFFD, and NUL is a valid
// JSON string character that only PostgreSQL refuses.
func textGuard(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !isAPI(c) {
			return next(c)
		}
		r := c.Request()
		ct := r.Header.Get(echo.HeaderContentType)
		if r.URL.RawQuery == "" && ct == "" {
			return next(c) // no text to check: most reads
		}
		v := &validationError{fields: apperr.FieldErrors{}}
		for _, k := range textinput.BadValues(c.QueryParams()) {
			v.structural = true // parameters are the URL's shape, never 422
			v.fields.Add(printable(k), textinput.Message)
		}
		if mt, _, _ := mime.ParseMediaType(ct); r.Body != nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return err // the body limit's 413
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			for _, ptr := range textinput.BadJSON(body) {
				v.fields.Add(fieldPath(ptr), textinput.Message)
			}
		}
		if len(v.fields) > 0 {
			return v.asError(c)
		}
		return next(c)
	}
}

// printable is a client-sent name fit for a field key.
func printable(s string) string {
	if textinput.Valid(s) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// collect flattens kin-openapi's nested errors into field messages.
func collect(v *validationError, err error) {
	var me openapi3.MultiError
	if errors.As(err, &me) && len(me) > 0 {
		if _, isMulti := err.(openapi3.MultiError); isMulti {
			for _, e := range me {
				collect(v, e)
			}
			return
		}
	}
	var re *openapi3filter.RequestError
	if errors.As(err, &re) {
		switch {
		case re.Parameter != nil:
			v.structural = true // parameters are the URL's shape, never 422
			v.fields.Add(re.Parameter.Name, paramMessage(re))
		case re.Err != nil:
			collectBody(v, re.Err)
		default:
			v.structural = true
			v.fields.Add("body", re.Reason)
		}
		return
	}
	collectBody(v, err)
}

func collectBody(v *validationError, err error) {
	if me, ok := err.(openapi3.MultiError); ok {
		for _, e := range me {
			collectBody(v, e)
		}
		return
	}
	var se *openapi3.SchemaError
	if errors.As(err, &se) {
		// allOf (how a nullable $ref is spelled in 3.0) wraps the real
		// failures, which carry their full paths: report those, so that
		// clients see fields[0].options.decimals, not fields[0].options.
		var inner openapi3.MultiError
		if se.SchemaField == "allOf" && se.Origin != nil && errors.As(se.Origin, &inner) && len(inner) > 0 {
			for _, e := range inner {
				collectBody(v, e)
			}
			return
		}
		field := fieldPath(se.JSONPointer())
		switch se.SchemaField {
		case "type", "required", "properties", "additionalProperties", "minProperties", "nullable", "oneOf", "anyOf", "allOf", "not":
			v.structural = true
		}
		v.fields.Add(field, schemaMessage(se))
		return
	}
	// Not a schema error: the body did not parse (malformed JSON, wrong
	// content type).
	v.structural = true
	msg := "is not valid JSON"
	var pe *openapi3filter.ParseError
	if !errors.As(err, &pe) {
		msg = firstLine(err.Error())
	}
	v.fields.Add("body", msg)
}

// fieldPath renders a JSON pointer as the key clients see: data[3].value.
func fieldPath(ptr []string) string {
	if len(ptr) == 0 {
		return "body"
	}
	var b strings.Builder
	for i, p := range ptr {
		if isIndex(p) {
			b.WriteString("[" + p + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// schemaMessage is the client-facing text of a schema failure. Format
// failures get a plain sentence instead of kin-openapi's, which quotes the
// whole validating regular expression.
func schemaMessage(se *openapi3.SchemaError) string {
	if se.SchemaField == "type" && errors.Is(se.Origin, strconv.ErrRange) {
		// A number beyond float64 (1e400): kin-openapi cannot compare it
		// with the schema, so it cannot be a value the schema allows.
		return "is out of range"
	}
	if se.SchemaField == "format" && se.Schema != nil {
		switch se.Schema.Format {
		case "uuid":
			return "must be a UUID such as 3f0c1d9e-8a53-4c1e-9a43-0d2b7f7c2a11"
		case "date-time":
			return "must be an RFC 3339 date-time such as 2026-01-31T12:00:00Z"
		case "email":
			return "must be an email address"
		}
	}
	return se.Reason
}

func paramMessage(re *openapi3filter.RequestError) string {
	var se *openapi3.SchemaError
	if errors.As(re.Err, &se) {
		return schemaMessage(se)
	}
	if re.Err != nil {
		return firstLine(re.Err.Error())
	}
	return re.Reason
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// kin-openapi fills a property's default in place of an explicit null
// before it validates the value, so a null where the schema allows none
// (`{"previous_secret_expires_in": null}`) passed as if it were absent.
// refuseNullDefaults refuses it first: 400 naming the field, as any other
// value outside the schema.

// nullTraps is, per route, the JSON request body schema of the operations
// whose body has a property with a default that is not nullable (the
// others need no look at the body).
func nullTraps(routes map[string]map[string]*routers.Route) map[*routers.Route]*openapi3.Schema {
	out := map[*routers.Route]*openapi3.Schema{}
	for _, byPath := range routes {
		for _, route := range byPath {
			rb := route.Operation.RequestBody
			if rb == nil || rb.Value == nil {
				continue
			}
			mt := rb.Value.Content.Get("application/json")
			if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
				continue
			}
			if hasDefaultedProperty(mt.Schema.Value, 0) {
				out[route] = mt.Schema.Value
			}
		}
	}
	return out
}

func hasDefaultedProperty(s *openapi3.Schema, depth int) bool {
	if s == nil || depth > 8 {
		return false
	}
	for _, p := range s.Properties {
		if p == nil || p.Value == nil {
			continue
		}
		if (p.Value.Default != nil && !p.Value.Nullable) || hasDefaultedProperty(p.Value, depth+1) {
			return true
		}
	}
	return s.Items != nil && hasDefaultedProperty(s.Items.Value, depth+1)
}

// refuseNullDefaults reads the request's JSON body (and puts it back) and
// refuses every explicit null given to a property of schema that has a
// default and is not nullable.
func refuseNullDefaults(c echo.Context, schema *openapi3.Schema) error {
	r := c.Request()
	if mt, _, _ := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType)); r.Body == nil || mt != "application/json" {
		return nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err // the body limit's 413
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil // not JSON: the validator says so
	}
	fe := apperr.FieldErrors{}
	nullDefaults(schema, v, nil, fe, 0)
	if len(fe) == 0 {
		return nil
	}
	return (&validationError{fields: fe, structural: true}).asError(c)
}

func nullDefaults(s *openapi3.Schema, v any, path []string, fe apperr.FieldErrors, depth int) {
	if s == nil || depth > 8 {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		for name, p := range s.Properties {
			pv, present := v[name]
			if !present || p == nil || p.Value == nil {
				continue
			}
			at := append(slices.Clone(path), name)
			if pv == nil && p.Value.Default != nil && !p.Value.Nullable {
				fe.Add(fieldPath(at), "must not be null")
				continue
			}
			nullDefaults(p.Value, pv, at, fe, depth+1)
		}
	case []any:
		if s.Items == nil {
			return
		}
		for i, item := range v {
			nullDefaults(s.Items.Value, item, append(slices.Clone(path), strconv.Itoa(i)), fe, depth+1)
		}
	}
}
