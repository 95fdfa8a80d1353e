package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
)

// Deprecation in the contract (README "Versions and deprecation"): an
// operation the spec marks `deprecated: true` keeps working and announces
// its end on every response, read from the spec at startup so the published
// contract and the headers cannot disagree:
//
//	Deprecation: @<unix seconds>   RFC 9745, from x-deprecated-at
//	Sunset: <HTTP-date>            RFC 8594, from x-sunset
//	Link: <changelog>; rel="deprecation"
//
// A deprecated property (the same flag and extensions on a schema
// property) brings the same headers: to a request whose JSON body sends it,
// and to every response of an operation whose success response contains
// it. When several apply, the earliest dates win.
//
// RFC 9745 defines Deprecation as a structured-field date only (the older
// drafts' "true" is not in the RFC), so a deprecated operation without
// x-deprecated-at is refused at startup rather than answered with a value
// clients may not parse. Both extensions take a date (2027-01-15, midnight
// UTC) or an RFC 3339 time, the forms oasdiff reads x-sunset in.

const (
	extDeprecatedAt = "x-deprecated-at"
	extSunset       = "x-sunset"
	// extDeprecationLink optionally points the Link at the operation's own
	// changelog entry instead of the whole changelog.
	extDeprecationLink = "x-deprecation-link"

	// ChangelogURL is the published changelog, the Link target by default.
	ChangelogURL = "https://github.com/finsvc/finsvc/blob/main/CHANGELOG.md"

	// minNotice is the shortest time between the Deprecation and Sunset
	// dates the README promises.
	minNoticeMonths = 6
)

// deprecationHeaders maps an echo route ("GET /api/1.0/clients/:id") to the
// headers every response of that route carries.
type deprecationHeaders map[string]http.Header

func routeKey(method, echoPath string) string { return method + " " + echoPath }

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

// echoPath spells a spec path the way the generated server registers it
// with echo ({id} → :id), which is what c.Path() returns for the match.
func echoPath(specPath string) string { return pathParam.ReplaceAllString(specPath, ":$1") }

// deprecationsFrom reads the deprecated operations of spec. It fails on
// anything that would make the headers wrong: no x-deprecated-at, a date it
// cannot read, dates on an operation that is not deprecated, or a sunset
// sooner than the promised notice after the deprecation.
func deprecationsFrom(spec *openapi3.T) (deprecationHeaders, error) {
	out := deprecationHeaders{}
	var errs []error
	paths := spec.Paths.InMatchingOrder()
	sort.Strings(paths) // stable error order
	for _, p := range paths {
		for method, op := range spec.Paths.Value(p).Operations() {
			name := op.OperationID
			if name == "" {
				name = method + " " + p
			}
			h, err := deprecationOf(op)
			if err != nil {
				errs = append(errs, fmt.Errorf("operation %s: %w", name, err))
				continue
			}
			// A deprecated property of a success response is in every
			// such response: the operation announces it like its own.
			for _, f := range responseFields(op) {
				h = earliest(h, f.header)
			}
			if h != nil {
				out[routeKey(method, echoPath(p))] = h
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("httpapi: deprecation: %w", err)
	}
	return out, nil
}

func deprecationOf(op *openapi3.Operation) (http.Header, error) {
	return deprecationHeader(op.Deprecated, op.Extensions, "an operation")
}

// deprecationHeader is the headers of something the spec may deprecate (an
// operation, or a property of a request or response body: what names
// it in errors), from its deprecated flag and extensions.
func deprecationHeader(deprecated bool, ext map[string]any, what string) (http.Header, error) {
	at, hasAt, err := extDate(ext, extDeprecatedAt)
	if err != nil {
		return nil, err
	}
	sunset, hasSunset, err := extDate(ext, extSunset)
	if err != nil {
		return nil, err
	}
	link, _ := ext[extDeprecationLink].(string)
	if !deprecated {
		if hasAt || hasSunset || link != "" {
			return nil, fmt.Errorf("%s, %s or %s on %s that is not deprecated", extDeprecatedAt, extSunset, extDeprecationLink, what)
		}
		return nil, nil
	}
	if !hasAt {
		return nil, fmt.Errorf("deprecated without %s: the Deprecation header (RFC 9745) is a date", extDeprecatedAt)
	}
	if link == "" {
		link = ChangelogURL
	}
	h := http.Header{}
	h.Set("Deprecation", "@"+strconv.FormatInt(at.Unix(), 10))
	h.Set("Link", "<"+link+`>; rel="deprecation"`)
	if hasSunset {
		if earliest := at.AddDate(0, minNoticeMonths, 0); sunset.Before(earliest) {
			return nil, fmt.Errorf("%s %s is less than %d months after %s %s",
				extSunset, sunset.Format(time.DateOnly), minNoticeMonths, extDeprecatedAt, at.Format(time.DateOnly))
		}
		h.Set("Sunset", sunset.UTC().Format(http.TimeFormat))
	}
	return h, nil
}

// extDate reads a date extension: a string (2027-01-15 or RFC 3339), or a
// time a YAML decoder may already have made of an unquoted date.
func extDate(ext map[string]any, name string) (time.Time, bool, error) {
	v, ok := ext[name]
	if !ok {
		return time.Time{}, false, nil
	}
	switch v := v.(type) {
	case time.Time:
		return v, true, nil
	case string:
		if t, err := time.Parse(time.DateOnly, v); err == nil {
			return t, true, nil
		}
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t, true, nil
		}
	}
	return time.Time{}, false, fmt.Errorf("%s %v is neither a date (2027-01-15) nor an RFC 3339 time", name, v)
}

// fieldDeprecation is a deprecated property of a body: where it is (object
// keys from the body's root; "*" is every element of an array) and the
// headers it brings.
type fieldDeprecation struct {
	path   []string
	header http.Header
}

// deprecatedFields walks schema (properties, array items, allOf/oneOf/anyOf)
// and returns its deprecated properties. seen stops a schema that contains
// itself.
func deprecatedFields(ref *openapi3.SchemaRef, at []string, seen map[*openapi3.Schema]bool, out *[]fieldDeprecation, errs *[]error) {
	if ref == nil || ref.Value == nil || seen[ref.Value] {
		return
	}
	s := ref.Value
	seen[s] = true
	defer delete(seen, s)
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := s.Properties[n]
		path := append(slices.Clone(at), n)
		if p.Value != nil {
			h, err := deprecationHeader(p.Value.Deprecated, p.Value.Extensions, "property "+strings.Join(path, "."))
			if err != nil {
				*errs = append(*errs, fmt.Errorf("property %s: %w", strings.Join(path, "."), err))
			} else if h != nil {
				*out = append(*out, fieldDeprecation{path, h})
			}
		}
		deprecatedFields(p, path, seen, out, errs)
	}
	deprecatedFields(s.Items, append(slices.Clone(at), "*"), seen, out, errs)
	for _, group := range []openapi3.SchemaRefs{s.AllOf, s.OneOf, s.AnyOf} {
		for _, sub := range group {
			deprecatedFields(sub, at, seen, out, errs)
		}
	}
}

func jsonSchema(content openapi3.Content) *openapi3.SchemaRef {
	if mt := content.Get("application/json"); mt != nil {
		return mt.Schema
	}
	return nil
}

// responseFields are the deprecated properties of op's success responses.
func responseFields(op *openapi3.Operation) []fieldDeprecation {
	var out []fieldDeprecation
	var errs []error
	if op.Responses == nil {
		return nil
	}
	for code, r := range op.Responses.Map() {
		if len(code) == 3 && code[0] == '2' && r.Value != nil {
			deprecatedFields(jsonSchema(r.Value.Content), nil, map[*openapi3.Schema]bool{}, &out, &errs)
		}
	}
	return out // a bad date in a response property is reported by requestFieldsFrom's walk of the components
}

// requestFieldsFrom maps each route to the deprecated properties of its
// JSON request body: a request that sends one of them is answered with the
// headers (one that leaves them out hears nothing).
func requestFieldsFrom(spec *openapi3.T) (map[string][]fieldDeprecation, error) {
	out := map[string][]fieldDeprecation{}
	var errs []error
	for p, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody == nil || op.RequestBody.Value == nil {
				continue
			}
			var fs []fieldDeprecation
			deprecatedFields(jsonSchema(op.RequestBody.Value.Content), nil, map[*openapi3.Schema]bool{}, &fs, &errs)
			if len(fs) > 0 {
				out[routeKey(method, echoPath(p))] = fs
			}
		}
	}
	// Every component schema, so that a bad date is refused wherever the
	// property is used.
	for name, c := range spec.Components.Schemas {
		var fs []fieldDeprecation
		deprecatedFields(c, []string{name}, map[*openapi3.Schema]bool{}, &fs, &errs)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("httpapi: deprecation: %w", err)
	}
	return out, nil
}

// earliest merges two sets of deprecation headers: the earlier Deprecation
// and the earlier Sunset win (a client must hear of the first end), the
// first Link stays.
func earliest(a, b http.Header) http.Header {
	switch {
	case a == nil:
		return b.Clone()
	case b == nil:
		return a
	}
	out := a.Clone()
	if b.Get("Deprecation") < a.Get("Deprecation") && len(b.Get("Deprecation")) == len(a.Get("Deprecation")) {
		out.Set("Deprecation", b.Get("Deprecation"))
	}
	if bs := b.Get("Sunset"); bs != "" {
		bt, _ := http.ParseTime(bs)
		if as := a.Get("Sunset"); as == "" {
			out.Set("Sunset", bs)
		} else if at, _ := http.ParseTime(as); bt.Before(at) {
			out.Set("Sunset", bs)
		}
	}
	return out
}

// present reports whether the JSON value v has a value at path.
func present(v any, path []string) bool {
	if len(path) == 0 {
		return true
	}
	switch x := v.(type) {
	case map[string]any:
		e, ok := x[path[0]]
		return ok && present(e, path[1:])
	case []any:
		if path[0] != "*" {
			return false
		}
		for _, e := range x {
			if present(e, path[1:]) {
				return true
			}
		}
	}
	return false
}

// declared refuses an operation that may send deprecation headers (it is
// deprecated, or a body of it has a deprecated property) unless every one of
// its responses declares them, so that the contract names every header a
// client can see: Deprecation and Link always, Sunset when a date is given.
func declared(spec *openapi3.T, byRoute deprecationHeaders, fields map[string][]fieldDeprecation) error {
	var errs []error
	paths := spec.Paths.InMatchingOrder()
	sort.Strings(paths)
	for _, p := range paths {
		for method, op := range spec.Paths.Value(p).Operations() {
			route := routeKey(method, echoPath(p))
			h := byRoute[route]
			for _, f := range fields[route] {
				h = earliest(h, f.header)
			}
			if h == nil || op.Responses == nil {
				continue
			}
			name := op.OperationID
			if name == "" {
				name = method + " " + p
			}
			codes := make([]string, 0, op.Responses.Len())
			for code := range op.Responses.Map() {
				codes = append(codes, code)
			}
			sort.Strings(codes)
			for _, code := range codes {
				r := op.Responses.Value(code)
				var missing []string
				for _, want := range []string{"Deprecation", "Sunset", "Link"} {
					if h.Get(want) == "" {
						continue
					}
					if r == nil || r.Value == nil || !hasHeader(r.Value.Headers, want) {
						missing = append(missing, want)
					}
				}
				if len(missing) > 0 {
					errs = append(errs, fmt.Errorf("operation %s: response %s sends but does not declare %s", name, code, strings.Join(missing, ", ")))
				}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("httpapi: deprecation: %w", err)
	}
	return nil
}

func hasHeader(hs openapi3.Headers, name string) bool {
	for k := range hs {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// deprecation sets the headers of a deprecated operation on its responses,
// errors included. It looks the route echo matched up in one map built at
// startup, so an operation that is not deprecated costs one map miss.
func deprecation(spec *openapi3.T) (echo.MiddlewareFunc, error) {
	byRoute, err := deprecationsFrom(spec)
	if err != nil {
		return nil, err
	}
	fields, err := requestFieldsFrom(spec)
	if err != nil {
		return nil, err
	}
	if err := declared(spec, byRoute, fields); err != nil {
		return nil, err
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if len(byRoute) == 0 && len(fields) == 0 {
			return next
		}
		return func(c echo.Context) error {
			route := routeKey(c.Request().Method, c.Path())
			h := byRoute[route]
			if fs := fields[route]; len(fs) > 0 {
				h = earliest(h, sentFields(c, fs))
			}
			dst := c.Response().Header()
			for k, v := range h {
				dst[k] = slices.Clone(v) // never share a slice a later Add could grow
			}
			return next(c)
		}
	}, nil
}

// sentFields is the merged headers of the deprecated fields the request's
// JSON body contains (nil: none, or no JSON body). The body is put back
// for the handlers.
func sentFields(c echo.Context, fs []fieldDeprecation) http.Header {
	req := c.Request()
	if req.Body == nil {
		return nil
	}
	body, err := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil || len(body) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	var h http.Header
	for _, f := range fs {
		if present(v, f.path) {
			h = earliest(h, f.header)
		}
	}
	return h
}
