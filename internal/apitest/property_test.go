package apitest_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/uuid"
	"pgregory.net/rapid"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/httpapi"
)

// specOp is one operation of the document.
type specOp struct {
	method, path string
	op           *openapi3.Operation
}

// propertyChecks is how many requests rapid generates per operation and
// dialect unless -rapid.checks is given: enough to reach every parameter
// and body property of each operation in both valid and invalid forms,
// and few enough that a dialect runs in well under a minute on two CPUs
// (a quarter of it under the race detector, which CI runs the tests with).
const propertyChecks = 100

// TestSpecProperties sends requests generated from the document's schemas
// to every operation, valid ones (drawn from the schemas, the examples and
// the ids that exist) and invalid ones (a parameter, a property or the
// body of the wrong type, out of range, malformed or missing; no token or
// a bad one), and asserts of every response: no 5xx, a status the
// operation declares, headers it declares, and a body matching its schema
// (apitest.ValidateResponse). It logs how many requests it sent.
func TestSpecProperties(t *testing.T) {
	if testing.Short() {
		t.Skip("generates thousands of requests")
	}
	if f := flag.Lookup("rapid.checks"); f != nil && !flagGiven("rapid.checks") {
		n := propertyChecks
		if raceEnabled {
			n /= 4
		}
		_ = f.Value.Set(strconv.Itoa(n))
	}
	spec, err := httpapi.Spec()
	if err != nil {
		t.Fatal(err)
	}
	var ops []specOp
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			ops = append(ops, specOp{method, path, op})
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].op.OperationID < ops[j].op.OperationID })

	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		g := newGen(t, env)
		start := time.Now()
		for _, o := range ops {
			t.Run(o.op.OperationID, func(t *testing.T) {
				rapid.Check(t, func(rt *rapid.T) { g.check(rt, o) })
			})
		}
		t.Logf("%d requests to %d operations in %s (%d with a 2xx, %d with a 4xx, %d of them 429)",
			g.sent.Load(), len(ops), time.Since(start).Round(time.Millisecond), g.ok.Load(), g.refused.Load(), g.limited.Load())
	}, apitest.WithConfig(func(c *config.Config) {
		// The middleware that answers before the handlers answers too:
		// bodies over a small limit (413), and the tenant's and the client
		// address's budgets, spent now and then at this pace (429).
		c.BodyLimit = 8 << 10
		c.RateLimitRPS, c.RateLimitBurst = 1000, 200
		c.RateLimitAddressRPS, c.RateLimitAddressBurst = 200, 40
	}))
}

func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// gen draws requests for one tenant whose data the seeding created.
type gen struct {
	env   *apitest.Env
	host  string
	admin string
	ints  []int64  // ids that exist (per-tenant ids start at 1)
	uuids []string // act and event ids that exist
	sent  atomic.Int64
	ok    atomic.Int64

	refused atomic.Int64
	limited atomic.Int64
}

func newGen(t *testing.T, env *apitest.Env) *gen {
	acme := env.Tenant("acme")
	g := &gen{env: env, host: acme.Host, admin: acme.AdminToken(), ints: []int64{1, 2, 3}}
	var c models.Client
	acme.Do("POST", "/api/1.0/clients", g.admin, map[string]any{
		"company_name": "Nordic Timber AS", "org_number": "923456781", "country": "NO", "credit_limit": 1000,
	}).Status(t, http.StatusCreated).Decode(t, &c)
	var tpl models.Template
	acme.Do("POST", "/api/1.0/templates", g.admin, map[string]any{
		"name": "Credit review", "fields": []map[string]any{
			{"key": "equity_ratio", "name": "Equity ratio", "type": "percentage", "source": "external_data"},
			{"key": "note", "name": "Note", "type": "text", "source": "manual"},
		},
	}).Status(t, http.StatusCreated).Decode(t, &tpl)
	var a models.Act
	acme.Do("POST", "/api/1.0/acts", g.admin, map[string]any{"client_id": c.Id, "template_id": tpl.Id, "title": "Review"}).
		Status(t, http.StatusCreated).Decode(t, &a)
	g.uuids = append(g.uuids, a.Uuid.String())
	var fr struct {
		ID string `json:"id"`
	}
	if r := acme.Do("POST", "/api/1.0/acts/"+a.Uuid.String()+"/fetch-requests", g.admin, nil); r.Code == http.StatusAccepted || r.Code == http.StatusCreated {
		r.Decode(t, &fr)
		if fr.ID != "" {
			g.uuids = append(g.uuids, fr.ID)
		}
	}
	var events struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	acme.Do("GET", "/api/1.0/events?limit=5", g.admin, nil).Status(t, http.StatusOK).Decode(t, &events)
	for _, e := range events.Data {
		g.uuids = append(g.uuids, e.ID)
	}
	return g
}

// check sends one generated request to o and checks the response.
func (g *gen) check(rt *rapid.T, o specOp) {
	// Most requests are valid in every part; the others break one part.
	broken := rapid.SampledFrom([]string{"", "", "", "", "", "path", "query", "body", "auth", "content-type"}).Draw(rt, "broken")
	path := o.path
	q := url.Values{}
	h := http.Header{}
	for _, pr := range o.op.Parameters {
		p := pr.Value
		if p.In == "query" && !p.Required && !rapid.Bool().Draw(rt, "with "+p.Name) {
			continue
		}
		var v string
		if broken == p.In && rapid.Bool().Draw(rt, "break "+p.Name) {
			v = g.badText(rt, p.Name)
		} else {
			v = g.text(rt, p.Schema.Value, p.Name, p.In == "path")
		}
		switch p.In {
		case "path":
			path = strings.ReplaceAll(path, "{"+p.Name+"}", url.PathEscape(v))
		case "query":
			q.Add(p.Name, v)
		case "header":
			h.Set(p.Name, v)
		}
	}
	if broken == "query" && rapid.Bool().Draw(rt, "unknown query") {
		q.Set("zz_"+rapid.StringMatching(`[a-z]{1,5}`).Draw(rt, "unknown"), "1")
	}
	var body io.Reader
	if rb := o.op.RequestBody; rb != nil {
		ct := "application/json"
		if _, ok := rb.Value.Content[ct]; !ok || rb.Value.Content["application/x-www-form-urlencoded"] != nil && rapid.Bool().Draw(rt, "form") {
			ct = "application/x-www-form-urlencoded"
		}
		var b []byte
		switch {
		case broken == "body":
			b = g.badBody(rt, rb.Value.Content.Get(ct).Schema.Value, ct)
		case rb.Value.Required || rapid.IntRange(0, 4).Draw(rt, "body?") > 0:
			b = g.body(rt, rb.Value.Content.Get(ct), ct)
		}
		if b != nil {
			body = bytes.NewReader(b)
			if broken == "content-type" {
				ct = rapid.SampledFrom([]string{"text/plain", "application/xml", "multipart/form-data", "application/json; charset=latin1", ""}).Draw(rt, "content type")
			}
			if ct != "" {
				h.Set("Content-Type", ct)
			}
		}
	}
	token := g.admin
	if broken == "auth" || o.op.Security != nil && len(*o.op.Security) == 0 && rapid.Bool().Draw(rt, "public, no token") {
		token = rapid.SampledFrom([]string{"", "", "garbage", "test_00000000000000000000000000000000"}).Draw(rt, "token")
	}
	req, err := http.NewRequest(o.method, g.env.Server.URL+path, body)
	if err != nil {
		rt.Fatalf("request: %v", err)
	}
	req.URL.RawQuery = q.Encode()
	req.Host = g.host
	req.Header = h
	req.Header.Set("Accept", rapid.SampledFrom([]string{"application/json", "*/*", "application/json"}).Draw(rt, "accept"))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		rt.Fatalf("%s %s: %v", o.method, req.URL, err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	g.sent.Add(1)
	switch {
	case resp.StatusCode >= 500:
		rt.Fatalf("%s %s → %d: %s", o.method, req.URL, resp.StatusCode, got)
	case resp.StatusCode < 300:
		g.ok.Add(1)
	case resp.StatusCode == http.StatusTooManyRequests:
		g.limited.Add(1)
		g.refused.Add(1)
	default:
		g.refused.Add(1)
	}
	if err := apitest.ValidateResponse(req, resp, got); err != nil {
		rt.Fatalf("%v", err)
	}
}

// text is a parameter value drawn from its schema; an id in a path is
// mostly one that exists.
func (g *gen) text(rt *rapid.T, s *openapi3.Schema, name string, inPath bool) string {
	if inPath && rapid.IntRange(0, 3).Draw(rt, name+" exists") > 0 {
		if s.Format == "uuid" {
			return rapid.SampledFrom(g.uuids).Draw(rt, name)
		}
		if s.Type.Is("integer") {
			return strconv.FormatInt(rapid.SampledFrom(g.ints).Draw(rt, name), 10)
		}
	}
	switch v := g.value(rt, s, name, 0).(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// badText is a malformed parameter value.
func (g *gen) badText(rt *rapid.T, name string) string {
	return rapid.SampledFrom([]string{
		"", " ", "x", "-1", "0", "1.5", "1e309", "99999999999999999999999", "-9223372036854775809",
		"null", "true", "[]", "{}", "2026-13-45T25:61:61Z", "00000000-0000-0000-0000-00000000000g",
		"a\x00b", "\xff\xfe", "%", strings.Repeat("a", 5000), "../../etc", "'; DROP TABLE clients; --",
	}).Draw(rt, "bad "+name)
}

// value draws a value valid under s (as far as a generator can tell: a
// pattern is met by the schema's example, when it has one).
func (g *gen) value(rt *rapid.T, s *openapi3.Schema, name string, depth int) any {
	if len(s.Enum) > 0 {
		return rapid.SampledFrom(s.Enum).Draw(rt, name)
	}
	if s.Example != nil && rapid.IntRange(0, 2).Draw(rt, name+" example") == 0 {
		return s.Example
	}
	switch {
	case len(s.OneOf) > 0:
		return g.value(rt, rapid.SampledFrom(s.OneOf).Draw(rt, name+" oneOf").Value, name, depth)
	case len(s.AnyOf) > 0:
		return g.value(rt, rapid.SampledFrom(s.AnyOf).Draw(rt, name+" anyOf").Value, name, depth)
	case len(s.AllOf) > 0:
		out := map[string]any{}
		for _, sub := range s.AllOf {
			if m, ok := g.value(rt, sub.Value, name, depth).(map[string]any); ok {
				for k, v := range m {
					out[k] = v
				}
			}
		}
		return out
	}
	if s.Nullable && rapid.IntRange(0, 9).Draw(rt, name+" null") == 0 {
		return nil
	}
	switch {
	case s.Type.Is("boolean"):
		return rapid.Bool().Draw(rt, name)
	case s.Type.Is("integer"):
		lo, hi := int64(-3), int64(1000)
		if s.Min != nil {
			lo = int64(*s.Min)
		}
		if s.Max != nil {
			hi = int64(math.Min(*s.Max, float64(math.MaxInt64/2)))
		}
		if hi < lo {
			hi = lo
		}
		return rapid.OneOf(rapid.Int64Range(lo, min(hi, lo+5)), rapid.Int64Range(lo, hi)).Draw(rt, name)
	case s.Type.Is("number"):
		cents := rapid.OneOf(rapid.Int64Range(0, 100000), rapid.Int64Range(-100, 100), rapid.Int64Range(0, 99999999999999999)).Draw(rt, name)
		if s.Format == "decimal" || s.MultipleOf != nil {
			return json.Number(fmt.Sprintf("%d.%02d", cents/100, cents%100))
		}
		return json.Number(strconv.FormatInt(cents, 10))
	case s.Type.Is("string"):
		return g.str(rt, s, name)
	case s.Type.Is("array"):
		n := rapid.IntRange(int(s.MinItems), int(min(s.MinItems+3, ptrOr(s.MaxItems, 1<<20)))).Draw(rt, name+" len")
		out := make([]any, n)
		for i := range out {
			out[i] = g.value(rt, s.Items.Value, fmt.Sprint(name, "[", i, "]"), depth+1)
		}
		return out
	default: // object
		out := map[string]any{}
		required := map[string]bool{}
		for _, r := range s.Required {
			required[r] = true
		}
		names := make([]string, 0, len(s.Properties))
		for k := range s.Properties {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			p := s.Properties[k].Value
			if p.ReadOnly || !required[k] && (depth > 3 || !rapid.Bool().Draw(rt, name+"."+k+"?")) {
				continue
			}
			out[k] = g.value(rt, p, name+"."+k, depth+1)
		}
		return out
	}
}

func ptrOr(p *uint64, d uint64) uint64 {
	if p == nil {
		return d
	}
	return *p
}

func (g *gen) str(rt *rapid.T, s *openapi3.Schema, name string) string {
	switch s.Format {
	case "date-time":
		sec := rapid.Int64Range(0, 4102444800).Draw(rt, name)
		us := rapid.Int64Range(0, 999999).Draw(rt, name+" µs")
		return time.Unix(sec, us*1000).UTC().Format(time.RFC3339Nano)
	case "uuid":
		if rapid.Bool().Draw(rt, name+" known") {
			return rapid.SampledFrom(g.uuids).Draw(rt, name)
		}
		return uuid.NewString()
	case "email":
		return rapid.StringMatching(`[a-z]{1,8}`).Draw(rt, name) + "@example.com"
	case "uri":
		return "https://" + rapid.StringMatching(`[a-z]{1,8}`).Draw(rt, name) + ".example.com/hook"
	}
	lo, hi := int(s.MinLength), int(ptrOr(s.MaxLength, 40))
	hi = min(hi, lo+40)
	if s.Pattern != "" {
		if v := rapid.StringMatching(s.Pattern).Draw(rt, name); len(v) >= lo && len(v) <= int(ptrOr(s.MaxLength, 1<<20)) {
			return v
		}
	}
	return rapid.StringOfN(rapid.RuneFrom([]rune("abcdefghijklmnopqrstuvwxyzÆØÅ0123456789 -_.")), lo, hi, -1).Draw(rt, name)
}

// body is a request body valid under media (its examples or drawn from its
// schema), encoded as ct.
func (g *gen) body(rt *rapid.T, media *openapi3.MediaType, ct string) []byte {
	var v any
	examples := []any{}
	if media.Example != nil {
		examples = append(examples, media.Example)
	}
	for _, e := range media.Examples {
		if e.Value != nil {
			examples = append(examples, e.Value.Value)
		}
	}
	if len(examples) > 0 && rapid.Bool().Draw(rt, "example") {
		v = rapid.SampledFrom(examples).Draw(rt, "which example")
	} else {
		v = g.value(rt, media.Schema.Value, "body", 0)
	}
	return encode(v, ct)
}

func encode(v any, ct string) []byte {
	if ct == "application/x-www-form-urlencoded" {
		form := url.Values{}
		if m, ok := v.(map[string]any); ok {
			for k, x := range m {
				form.Set(k, fmt.Sprint(x))
			}
		}
		return []byte(form.Encode())
	}
	b, _ := json.Marshal(v)
	return b
}

// badBody is a body that breaks s: one property of the wrong type or
// value, a required one missing, an unknown one, or not the declared
// shape at all.
func (g *gen) badBody(rt *rapid.T, s *openapi3.Schema, ct string) []byte {
	switch rapid.IntRange(0, 4).Draw(rt, "how") {
	case 4: // over the body limit
		return encode(map[string]any{"name": strings.Repeat("x", 9<<10)}, ct)
	case 0:
		return []byte(rapid.SampledFrom([]string{"", "{", "[]", "null", "1", `"x"`, `{"a":}`, "\x00", `{"x":1}{"y":2}`,
			`{"credit_limit": 1e400}`, `{"title": "\ud800"}`, strings.Repeat("[", 10000)}).Draw(rt, "raw"))
	case 1:
		m, _ := g.value(rt, s, "body", 0).(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		if len(s.Required) > 0 {
			delete(m, rapid.SampledFrom(s.Required).Draw(rt, "drop"))
		} else {
			m["zz_unknown"] = 1
		}
		return encode(m, ct)
	default:
		m, _ := g.value(rt, s, "body", 0).(map[string]any)
		if m == nil || len(s.Properties) == 0 {
			return encode([]any{1, "x"}, ct)
		}
		names := make([]string, 0, len(s.Properties))
		for k := range s.Properties {
			names = append(names, k)
		}
		sort.Strings(names)
		k := rapid.SampledFrom(names).Draw(rt, "break property")
		m[k] = rapid.SampledFrom([]any{nil, "", "x", -1, 0, 1.5, 1e300, true, []any{}, map[string]any{}, strings.Repeat("é", 3000),
			"a\x00b", json.Number("99999999999999999999.999"), json.Number("-0.001"), "2026-02-30T00:00:00Z"}).Draw(rt, "bad "+k)
		return encode(m, ct)
	}
}
