package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
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
	at, hasAt, err := extDate(op, extDeprecatedAt)
	if err != nil {
		return nil, err
	}
	sunset, hasSunset, err := extDate(op, extSunset)
	if err != nil {
		return nil, err
	}
	link, _ := op.Extensions[extDeprecationLink].(string)
	if !op.Deprecated {
		if hasAt || hasSunset || link != "" {
			return nil, fmt.Errorf("%s, %s or %s on an operation that is not deprecated", extDeprecatedAt, extSunset, extDeprecationLink)
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
func extDate(op *openapi3.Operation, name string) (time.Time, bool, error) {
	v, ok := op.Extensions[name]
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

// deprecation sets the headers of a deprecated operation on its responses,
// errors included. It looks the route echo matched up in one map built at
// startup, so an operation that is not deprecated costs one map miss.
func deprecation(spec *openapi3.T) (echo.MiddlewareFunc, error) {
	byRoute, err := deprecationsFrom(spec)
	if err != nil {
		return nil, err
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if len(byRoute) == 0 {
			return next
		}
		return func(c echo.Context) error {
			if h, ok := byRoute[routeKey(c.Request().Method, c.Path())]; ok {
				dst := c.Response().Header()
				for k, v := range h {
					dst[k] = slices.Clone(v) // never share a slice a later Add could grow
				}
			}
			return next(c)
		}
	}, nil
}
