// Package compat is the breaking-change gate of the published contract: it
// compares openapi/finsvc.yaml with the newest released spec kept in
// openapi/released/ (finsvc-<version>.yaml) using oasdiff's
// backward-compatibility checks, and refuses any ERR-level change unless the
// contract's major version went up. .ci/run runs it through cmd/compat;
// README.md ("Versions and deprecation") states the policy it enforces.
package compat

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oasdiff/oasdiff/checker"
	"github.com/oasdiff/oasdiff/diff"
	"github.com/oasdiff/oasdiff/load"
)

// MinSunsetDays is how far ahead (from the day the check runs) the x-sunset
// date of a newly deprecated operation, parameter or property must lie: the
// README promises at least six months of notice, and oasdiff reports a
// deprecation without a sunset date, or with a nearer one, as an error.
const MinSunsetDays = 180

// Result is the verdict on one pair of specs.
type Result struct {
	Released, Current string // info.version of each
	// Breaking are oasdiff's ERR-level changes and the lower-rated ones the
	// README calls breaking (breakingBelowErr), one line each.
	Breaking []string
	// Notes are the WARN-level changes: reported, never fatal.
	Notes []string
	// MajorBumped is true when Current's major version is greater than
	// Released's, which is the one case breaking changes are allowed.
	MajorBumped bool
}

// OK reports whether the change may land.
func (r Result) OK() bool { return len(r.Breaking) == 0 || r.MajorBumped }

// Check compares current with released (both OpenAPI documents, YAML or
// JSON). It fails, rather than passing silently, on a document it cannot
// load or a version that is not semver, or when current's version is lower
// than released's.
func Check(released, current []byte) (Result, error) {
	base, err := load.NewSpecInfoFromData(openapi3.NewLoader(), released, "released.yaml")
	if err != nil {
		return Result{}, fmt.Errorf("load the released spec: %w", err)
	}
	rev, err := load.NewSpecInfoFromData(openapi3.NewLoader(), current, "finsvc.yaml")
	if err != nil {
		return Result{}, fmt.Errorf("load the current spec: %w", err)
	}
	r := Result{Released: version(base.Spec), Current: version(rev.Spec)}
	rv, err := parseSemver(r.Released)
	if err != nil {
		return r, fmt.Errorf("released spec: %w", err)
	}
	cv, err := parseSemver(r.Current)
	if err != nil {
		return r, fmt.Errorf("current spec: %w", err)
	}
	if slices.Compare(cv[:], rv[:]) < 0 {
		return r, fmt.Errorf("info.version %s is lower than the released %s", r.Current, r.Released)
	}
	// A version names one contract: a document that differs from the
	// release must not be served under the release's version.
	if r.Current == r.Released && !bytes.Equal(released, current) {
		return r, fmt.Errorf("info.version %s is the released version, but the contract differs from that release: serve the next version with -dev (for example %d.%d.0-dev) until it is released", r.Current, rv[0], rv[1]+1)
	}
	r.MajorBumped = cv[0] > rv[0]

	if err := r.compare(base, rev, nil); err != nil {
		return r, err
	}
	// oasdiff's checker walks the operations only; a receiver generated
	// from the spec relies on the callbacks' payloads as a client relies on
	// responses, so they are compared again as responses (webhookPayloads).
	baseHooks, baseNames := webhookPayloads(base.Spec)
	revHooks, revNames := webhookPayloads(rev.Spec)
	for path, name := range baseNames {
		revNames[path] = name
	}
	if err := r.compare(&load.SpecInfo{Url: base.Url, Spec: baseHooks}, &load.SpecInfo{Url: rev.Url, Spec: revHooks}, revNames); err != nil {
		return r, err
	}
	return r, nil
}

// compare adds oasdiff's verdicts on base → rev to r. names, when given,
// are the webhook payloads' synthetic paths with what the report calls
// them.
func (r *Result) compare(base, rev *load.SpecInfo, names map[string]string) error {
	d, sources, err := diff.GetWithOperationsSourcesMap(diff.NewConfig(), base, rev)
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	cfg := checker.NewConfig(checker.GetAllChecks(), checker.WithDeprecation(MinSunsetDays, MinSunsetDays))
	l := checker.NewDefaultLocalizer()
	for _, c := range checker.CheckBackwardCompatibilityUntilLevel(cfg, d, sources, checker.INFO) {
		if c.GetLevel() < checker.WARN && !breakingBelowErr[c.GetId()] {
			continue // additions and other news
		}
		line := c.SingleLineError(l, checker.ColorNever)
		if name, ok := names[c.GetPath()]; ok {
			line = name + ": " + strings.Replace(line, "API "+c.GetOperation()+" "+c.GetPath()+" ", "", 1)
		}
		if why := reviewedChange(r.Released, rev.Spec, c, line); why != "" {
			r.Notes = append(r.Notes, line+" (reviewed: "+why+")")
			continue
		}
		if c.GetLevel() >= checker.ERR || breakingBelowErr[c.GetId()] {
			r.Breaking = append(r.Breaking, line)
		} else {
			r.Notes = append(r.Notes, line)
		}
	}
	return nil
}

// webhookPayloads is spec's callbacks turned inside out for oasdiff: one
// operation per callback operation, at a synthetic path, whose 200 response
// is what the receiver is sent (the callback's request body, and its header
// parameters as response headers). Whatever the response rules call
// breaking (a required property removed, a type changed, a header gone, an
// enum grown) is then breaking for the receiver too. names maps each
// synthetic path to the callback it stands for.
func webhookPayloads(spec *openapi3.T) (hooks *openapi3.T, names map[string]string) {
	paths := openapi3.NewPaths()
	names = map[string]string{}
	if spec.Paths != nil {
		for _, p := range spec.Paths.InMatchingOrder() {
			for method, op := range spec.Paths.Value(p).Operations() {
				for cbName, cb := range op.Callbacks {
					if cb == nil || cb.Value == nil {
						continue
					}
					for expr, item := range cb.Value.Map() {
						for cbMethod, cbOp := range item.Operations() {
							path := "/webhooks/" + method + p + "/" + cbName + "/" + url.PathEscape(expr) + "/" + cbMethod
							path = strings.NewReplacer("{", "(", "}", ")").Replace(path)
							names[path] = fmt.Sprintf("webhook payload %s (callback %s of %s %s, %s to %s)", cbName, cbName, method, p, cbMethod, expr)
							paths.Set(path, &openapi3.PathItem{Post: asResponse(cbOp)})
						}
					}
				}
			}
		}
	}
	return &openapi3.T{OpenAPI: spec.OpenAPI, Info: spec.Info, Components: spec.Components, Paths: paths}, names
}

// asResponse is the operation whose 200 response carries what cb sends.
func asResponse(cb *openapi3.Operation) *openapi3.Operation {
	desc := "the delivered payload"
	resp := &openapi3.Response{Description: &desc, Headers: openapi3.Headers{}}
	if cb.RequestBody != nil && cb.RequestBody.Value != nil {
		resp.Content = cb.RequestBody.Value.Content
	}
	for _, p := range cb.Parameters {
		if p == nil || p.Value == nil || p.Value.In != openapi3.ParameterInHeader {
			continue
		}
		resp.Headers[p.Value.Name] = &openapi3.HeaderRef{Value: &openapi3.Header{Parameter: *p.Value}}
	}
	return &openapi3.Operation{
		OperationID: cb.OperationID,
		Responses:   openapi3.NewResponses(openapi3.WithStatus(200, &openapi3.ResponseRef{Value: resp})),
	}
}

// Reviewed is a change oasdiff reports as breaking that no client written
// against the release can be hurt by. Most entries state in the schema what
// one release's contract already said in words: they apply to the one
// release named, the listed operations and the change whose text contains
// Contains, and to nothing once the next release is cut. An entry with
// Schemas instead applies to every release and operation, to a change of a
// response property that is (a $ref to) one of those component schemas.
type Reviewed struct {
	Release    string   // info.version of the released spec; "" with Schemas: any
	ID         string   // oasdiff rule id
	Operations []string // "METHOD /path"
	Schemas    []string // component schema names, instead of Operations
	Contains   string   // a fragment of the change's text
	Why        string
}

// reviewed is the whole list; each entry says why it breaks no client.
var reviewed = []Reviewed{
	{
		Release: "1.0.0", ID: "request-property-type-changed",
		Operations: []string{"POST /api/1.0/clients", "PATCH /api/1.0/clients/{id}"},
		Contains:   "`credit_limit` request property `format` changed from `none` to `decimal`",
		Why:        "format decimal names the number's meaning, the JSON type stays number; it replaces a server-only x-go-type",
	},
	{
		Release: "1.0.0", ID: "request-property-multiple-of-set",
		Operations: []string{"POST /api/1.0/clients", "PATCH /api/1.0/clients/{id}"},
		Contains:   "`credit_limit` request property's multipleOf was set to `0.01`",
		Why:        "1.0.0 already refused more than two fractional digits with 400 (its description says so)",
	},
	{
		ID: "response-property-enum-value-added", Schemas: []string{"EventKind", "DeliveryEventKind"},
		Contains: "enum value to the `",
		Why:      "event kinds are an open set: both schemas say new kinds come in minor versions and clients must accept values they do not know",
	},
	{
		ID: "response-property-enum-value-added", Schemas: []string{"ErrorCode"},
		Contains: "enum value to the `code` response property",
		Why:      "error codes are an open set: ErrorCode says new codes may be added and an unknown code is treated by its status",
	},
}

func reviewedChange(release string, cur *openapi3.T, c checker.Change, line string) string {
	for _, e := range reviewed {
		if e.ID != c.GetId() || !strings.Contains(line, e.Contains) {
			continue
		}
		if len(e.Schemas) > 0 {
			if (e.Release == "" || e.Release == release) && responsePropertyIs(cur, c, line, e.Schemas) {
				return e.Why
			}
			continue
		}
		if e.Release == release && slices.Contains(e.Operations, c.GetOperation()+" "+c.GetPath()) {
			return e.Why
		}
	}
	return ""
}

var (
	responsePropertyRe = regexp.MustCompile("to the `([^`]+)` response property")
	responseStatusRe   = regexp.MustCompile("for the response status `([0-9A-Za-z]+)`")
)

// responsePropertyIs reports whether the response property a change names
// (its path, data/items/event, and status come from the change's text) is,
// in every JSON body of that response in spec, a $ref to one of schemas.
func responsePropertyIs(spec *openapi3.T, c checker.Change, line string, schemas []string) bool {
	pm, sm := responsePropertyRe.FindStringSubmatch(line), responseStatusRe.FindStringSubmatch(line)
	if pm == nil || sm == nil || spec == nil || spec.Paths == nil {
		return false
	}
	item := spec.Paths.Find(c.GetPath())
	if item == nil {
		return false
	}
	op := item.GetOperation(c.GetOperation())
	if op == nil || op.Responses == nil {
		return false
	}
	resp := op.Responses.Value(sm[1])
	if resp == nil || resp.Value == nil || len(resp.Value.Content) == 0 {
		return false
	}
	for _, mt := range resp.Value.Content {
		s := mt.Schema
		for _, seg := range strings.Split(pm[1], "/") {
			if s == nil || s.Value == nil {
				return false
			}
			if seg == "items" && s.Value.Items != nil {
				s = s.Value.Items
			} else {
				s = s.Value.Properties[seg]
			}
		}
		name, ok := strings.CutPrefix(refOf(s), "#/components/schemas/")
		if !ok || !slices.Contains(schemas, name) {
			return false
		}
	}
	return true
}

func refOf(s *openapi3.SchemaRef) string {
	if s == nil {
		return ""
	}
	return s.Ref
}

// breakingBelowErr are the changes README.md ("Versions and deprecation")
// calls breaking that oasdiff rates below ERR: a client generated from the
// released spec reads a removed field, a removed header or a removed status
// as it was declared, and sends a removed parameter.
var breakingBelowErr = map[string]bool{
	"response-optional-property-removed":            true, // a removed response field, optional or not
	"response-optional-write-only-property-removed": true,
	"optional-response-header-removed":              true,
	"response-non-success-status-removed":           true, // a changed status code
	"request-parameter-removed":                     true,
	"response-media-type-removed":                   true,
}

func version(t *openapi3.T) string {
	if t.Info == nil {
		return ""
	}
	return t.Info.Version
}

var semverRe = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-dev)?$`)

// parseSemver accepts MAJOR.MINOR.PATCH, or MAJOR.MINOR.PATCH-dev for the
// contract between releases (the next version, unreleased); anything else
// is a typo that would disarm the gate.
func parseSemver(v string) ([3]int, error) {
	m := semverRe.FindStringSubmatch(v)
	if m == nil {
		return [3]int{}, fmt.Errorf("info.version %q is not MAJOR.MINOR.PATCH or MAJOR.MINOR.PATCH-dev", v)
	}
	var out [3]int
	for i := range out {
		out[i], _ = strconv.Atoi(m[i+1])
	}
	return out, nil
}

var releasedName = regexp.MustCompile(`^finsvc-(.+)\.yaml$`)

// Newest returns the path of the released spec with the highest version in
// dir (by the version in its name, finsvc-1.2.0.yaml, not by file dates).
func Newest(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var best string
	var bestV [3]int
	for _, e := range entries {
		m := releasedName.FindStringSubmatch(e.Name())
		if e.IsDir() || m == nil {
			continue
		}
		v, err := parseSemver(m[1])
		if err != nil {
			return "", fmt.Errorf("%s: %w", e.Name(), err)
		}
		if best == "" || slices.Compare(v[:], bestV[:]) > 0 {
			best, bestV = e.Name(), v
		}
	}
	if best == "" {
		return "", errors.New("no finsvc-<version>.yaml in " + dir)
	}
	return filepath.Join(dir, best), nil
}

// Report is r as the CI log shows it.
func (r Result) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "released %s → current %s: %d breaking, %d to review\n", r.Released, r.Current, len(r.Breaking), len(r.Notes))
	for _, s := range r.Breaking {
		fmt.Fprintf(&b, "  %s\n", s)
	}
	for _, s := range r.Notes {
		fmt.Fprintf(&b, "  %s\n", s)
	}
	switch {
	case len(r.Breaking) == 0:
		b.WriteString("no breaking change\n")
	case r.MajorBumped:
		b.WriteString("breaking changes accepted: the major version went up\n")
	default:
		b.WriteString("breaking changes need a new major version (and path prefix); make the change additive instead\n")
	}
	return b.String()
}
