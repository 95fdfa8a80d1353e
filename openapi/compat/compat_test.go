package compat_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/finsvc/finsvc/openapi/compat"
)

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func released(t *testing.T) []byte {
	t.Helper()
	path, err := compat.Newest("../released")
	if err != nil {
		t.Fatal(err)
	}
	return read(t, path)
}

// edited is the current spec changed by edit, as JSON (a YAML subset),
// labelled as a contributor labels a change on top of a release: the next
// minor version with -dev (an edit may set its own version).
func edited(t *testing.T, edit func(*openapi3.T)) []byte {
	t.Helper()
	spec, err := openapi3.NewLoader().LoadFromData(read(t, "../finsvc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if v := spec.Info.Version; !strings.HasSuffix(v, "-dev") {
		var major, minor, patch int
		if _, err := fmt.Sscanf(v, "%d.%d.%d", &major, &minor, &patch); err != nil {
			t.Fatalf("info.version %q: %v", v, err)
		}
		spec.Info.Version = fmt.Sprintf("%d.%d.0-dev", major, minor+1)
	}
	edit(spec)
	b, err := spec.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func schema(spec *openapi3.T, name string) *openapi3.Schema {
	return spec.Components.Schemas[name].Value
}

func removeResponseProperty(spec *openapi3.T) {
	s := schema(spec, "Client")
	delete(s.Properties, "org_number")
	s.Required = without(s.Required, "org_number")
}

func addRequiredRequestField(spec *openapi3.T) {
	s := schema(spec, "ClientCreate")
	s.Properties["vat_number"] = openapi3.NewSchemaRef("", openapi3.NewStringSchema())
	s.Required = append(s.Required, "vat_number")
}

func without(list []string, drop string) []string {
	var out []string
	for _, s := range list {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

func TestCurrentSpecPasses(t *testing.T) {
	t.Parallel()
	r, err := compat.Check(released(t), read(t, "../finsvc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || len(r.Breaking) != 0 {
		t.Fatalf("the current spec breaks the released one:\n%s", r.Report())
	}
}

func TestGate(t *testing.T) {
	t.Parallel()
	inAYear := time.Now().AddDate(1, 0, 0).Format(time.DateOnly)
	cases := []struct {
		name string
		edit func(*openapi3.T)
		ok   bool
		want string // an oasdiff rule id among the breaking changes
		in   string // what the breaking change's line names, when not an operation
	}{
		{name: "removed response property", edit: removeResponseProperty, want: "response-required-property-removed"},
		{name: "new required request field", edit: addRequiredRequestField, want: "new-required-request-property"},
		{name: "removed operation", edit: func(s *openapi3.T) {
			s.Paths.Value("/api/1.0/clients/{id}").Delete = nil
		}, want: "api-removed-without-deprecation"},
		{name: "request property narrowed to an enum", edit: func(s *openapi3.T) {
			p := schema(s, "ClientCreate").Properties["country"].Value
			p.Enum = []any{"NO", "SE"}
		}, want: "request-property-became-enum"},
		{name: "removed optional response property", edit: func(s *openapi3.T) {
			delete(schema(s, "Actor").Properties, "user_id")
		}, want: "response-optional-property-removed"},
		{name: "removed request enum value", edit: func(s *openapi3.T) {
			r := schema(s, "Role")
			r.Enum = r.Enum[:len(r.Enum)-1]
		}, want: "request-property-enum-value-removed"},
		{name: "narrowed request type", edit: func(s *openapi3.T) {
			schema(s, "ClientCreate").Properties["credit_limit"].Value.Type = &openapi3.Types{"integer"}
		}, want: "request-property-type-changed"},
		{name: "changed response type", edit: func(s *openapi3.T) {
			schema(s, "Client").Properties["country"].Value.Type = &openapi3.Types{"integer"}
		}, want: "response-property-type-changed"},
		{name: "removed parameter", edit: func(s *openapi3.T) {
			op := s.Paths.Value("/api/1.0/clients").Get
			var keep openapi3.Parameters
			for _, p := range op.Parameters {
				if p.Value.Name != "limit" {
					keep = append(keep, p)
				}
			}
			op.Parameters = keep
		}, want: "request-parameter-removed"},
		{name: "changed success status", edit: func(s *openapi3.T) {
			op := s.Paths.Value("/api/1.0/clients").Post
			op.Responses.Set("200", op.Responses.Value("201"))
			op.Responses.Delete("201")
		}, want: "response-success-status-removed"},
		{name: "removed error status", edit: func(s *openapi3.T) {
			s.Paths.Value("/api/1.0/clients/{id}").Get.Responses.Delete("404")
		}, want: "response-non-success-status-removed"},
		{name: "removed response header", edit: func(s *openapi3.T) {
			delete(s.Paths.Value("/api/1.0/clients").Post.Responses.Value("201").Value.Headers, "Idempotent-Replayed")
		}, want: "optional-response-header-removed"},
		{name: "deprecated without a sunset date", edit: func(s *openapi3.T) {
			s.Paths.Value("/api/1.0/clients/{id}").Get.Deprecated = true
		}, want: "api-deprecated-sunset-missing"},
		{name: "deprecated with a sunset date too soon", edit: func(s *openapi3.T) {
			op := s.Paths.Value("/api/1.0/clients/{id}").Get
			op.Deprecated = true
			op.Extensions = map[string]any{"x-sunset": time.Now().AddDate(0, 1, 0).Format(time.DateOnly)}
		}, want: "api-sunset-date-too-small"},

		{name: "credit_limit in steps of a tenth, not a hundredth", edit: func(s *openapi3.T) {
			v := 0.1
			schema(s, "ClientCreate").Properties["credit_limit"].Value.MultipleOf = &v
		}, want: "request-property-multiple-of-changed"},
		{name: "another request number given a format", edit: func(s *openapi3.T) {
			schema(s, "ClientUpdate").Properties["credit_limit"].Value.Format = "double"
		}, want: "request-property-type-changed"},

		{name: "a value added to a response enum other than the event kinds", edit: func(s *openapi3.T) {
			st := schema(s, "DeliveryStatus")
			st.Enum = append(st.Enum, "parked")
		}, want: "response-property-enum-value-added"},
		{name: "a value added to the event kinds (an open set, reviewed)", ok: true, edit: func(s *openapi3.T) {
			for _, name := range []string{"EventKind", "DeliveryEventKind"} {
				k := schema(s, name)
				k.Enum = append(k.Enum, "invoice.paid")
			}
		}},
		{name: "new optional request field and response field", ok: true, edit: func(s *openapi3.T) {
			schema(s, "ClientCreate").Properties["vat_number"] = openapi3.NewSchemaRef("", openapi3.NewStringSchema())
			schema(s, "Client").Properties["vat_number"] = openapi3.NewSchemaRef("", openapi3.NewStringSchema())
		}},
		{name: "new operation", ok: true, edit: func(s *openapi3.T) {
			get := s.Paths.Value("/api/1.0/clients/{id}").Get
			op := *get
			op.OperationID = "getClientSummary"
			s.Paths.Set("/api/1.0/clients/{id}/summary", &openapi3.PathItem{Get: &op})
			s.Info.Version = "1.2.0"
		}},
		{name: "deprecated with a sunset date six months on", ok: true, edit: func(s *openapi3.T) {
			op := s.Paths.Value("/api/1.0/clients/{id}").Get
			op.Deprecated = true
			op.Extensions = map[string]any{"x-sunset": inAYear}
		}},
		{name: "breaking with a new major version", ok: true, want: "response-required-property-removed", edit: func(s *openapi3.T) {
			removeResponseProperty(s)
			s.Info.Version = "2.0.0"
		}},

		// Webhook payloads (the callbacks' request bodies and headers),
		// under the rules of responses: a receiver relies on them.
		{name: "webhook payload: required property removed", in: "webhook payload actCreated", edit: func(s *openapi3.T) {
			e := schema(s, "ActCreatedEvent")
			delete(e.Properties, "occurred_at")
			e.Required = without(e.Required, "occurred_at")
		}, want: "response-required-property-removed"},
		{name: "webhook payload: required property became optional", in: "webhook payload actCreated", edit: func(s *openapi3.T) {
			e := schema(s, "ActCreatedEvent")
			e.Required = without(e.Required, "occurred_at")
		}, want: "response-property-became-optional"},
		{name: "webhook payload: nested property's type changed", in: "webhook payload actDeleted", edit: func(s *openapi3.T) {
			schema(s, "ActDeletedPayload").Properties["client_id"].Value.Type = &openapi3.Types{"string"}
		}, want: "response-property-type-changed"},
		{name: "webhook payload: value added to the event's enum", in: "webhook payload actCreated", edit: func(s *openapi3.T) {
			ev := schema(s, "ActCreatedEvent").Properties["event"].Value
			ev.Enum = append(ev.Enum, "act.imported")
		}, want: "response-property-enum-value-added"},
		{name: "webhook payload: required header removed", in: "webhook payload actCreated", edit: func(s *openapi3.T) {
			op := callback(s, "actCreated")
			var keep openapi3.Parameters
			for _, p := range op.Parameters {
				if p.Value.Name != "webhook-signature" {
					keep = append(keep, p)
				}
			}
			op.Parameters = keep
		}, want: "required-response-header-removed"},
		{name: "webhook payload: header became optional", in: "webhook payload actFetchData", edit: func(s *openapi3.T) {
			s.Components.Parameters["XSignature"].Value.Required = false
		}, want: "response-header-became-optional"},
		{name: "webhook payload: media type removed", in: "webhook payload clientDeleted", edit: func(s *openapi3.T) {
			c := callback(s, "clientDeleted").RequestBody.Value.Content
			c["application/xml"] = c["application/json"]
			delete(c, "application/json")
		}, want: "response-media-type-removed"},
		{name: "webhook payload: callback removed", in: "webhook payload actDuplicated", edit: func(s *openapi3.T) {
			delete(s.Paths.Value("/api/1.0/webhooks").Post.Callbacks, "actDuplicated")
		}, want: "api-path-removed-without-deprecation"},
		{name: "webhook payload: optional property added", ok: true, edit: func(s *openapi3.T) {
			schema(s, "ActCreatedEvent").Properties["tenant"] = openapi3.NewSchemaRef("", openapi3.NewStringSchema())
			schema(s, "ActDeletedPayload").Properties["title"] = openapi3.NewSchemaRef("", openapi3.NewStringSchema())
		}},
		{name: "webhook payload: new optional header", ok: true, edit: func(s *openapi3.T) {
			op := callback(s, "actCreated")
			op.Parameters = append(op.Parameters, &openapi3.ParameterRef{Value: openapi3.NewHeaderParameter("X-Finsvc-Tenant").WithSchema(openapi3.NewStringSchema())})
		}},
	}
	base := released(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r, err := compat.Check(base, edited(t, c.edit))
			if err != nil {
				t.Fatal(err)
			}
			if r.OK() != c.ok {
				t.Fatalf("OK() = %v, want %v:\n%s", r.OK(), c.ok, r.Report())
			}
			if c.want == "" {
				if len(r.Breaking) != 0 {
					t.Fatalf("an additive change reported as breaking:\n%s", r.Report())
				}
				return
			}
			for _, line := range r.Breaking {
				if strings.Contains(line, "["+c.want+"]") && strings.Contains(line, c.in) {
					return
				}
			}
			t.Fatalf("no %s (%q) among the breaking changes:\n%s", c.want, c.in, r.Report())
		})
	}
}

// callback is the POST of createWebhook's callback name.
func callback(s *openapi3.T, name string) *openapi3.Operation {
	return s.Paths.Value("/api/1.0/webhooks").Post.Callbacks[name].Value.Value("{$request.body#/target}").Post
}

// A value added to the event kinds is the reviewed change in a webhook
// payload too: a payload property that is an EventKind grows with the set,
// as a response property does. The property exists in both releases here
// (no payload has one yet).
func TestWebhookPayloadEventKindReviewed(t *testing.T) {
	t.Parallel()
	withKind := func(s *openapi3.T) {
		schema(s, "WebhookTestPayload").Properties["subscribed_event"] = openapi3.NewSchemaRef("#/components/schemas/EventKind", schema(s, "EventKind"))
	}
	base := edited(t, func(s *openapi3.T) { withKind(s); s.Info.Version = "1.2.0" })
	for _, c := range []struct {
		kind string
		ok   bool
	}{{"EventKind", true}, {"DeliveryStatus", false}} {
		cur := edited(t, func(s *openapi3.T) {
			withKind(s)
			if c.kind != "EventKind" {
				schema(s, "WebhookTestPayload").Properties["subscribed_event"] = openapi3.NewSchemaRef("#/components/schemas/"+c.kind, schema(s, c.kind))
			}
			k := schema(s, c.kind)
			k.Enum = append(k.Enum, "invoice.paid")
			s.Info.Version = "1.3.0-dev"
		})
		if c.kind != "EventKind" {
			// The base has the same property as a DeliveryStatus.
			base = edited(t, func(s *openapi3.T) {
				schema(s, "WebhookTestPayload").Properties["subscribed_event"] = openapi3.NewSchemaRef("#/components/schemas/"+c.kind, schema(s, c.kind))
				s.Info.Version = "1.2.0"
			})
		}
		r, err := compat.Check(base, cur)
		if err != nil {
			t.Fatal(err)
		}
		if r.OK() != c.ok {
			t.Fatalf("%s grown in a payload: OK() = %v, want %v:\n%s", c.kind, r.OK(), c.ok, r.Report())
		}
		if c.ok && !strings.Contains(r.Report(), "webhook payload webhookTest") {
			t.Fatalf("the reviewed change is not among the notes:\n%s", r.Report())
		}
	}
}

// The reviewed changes (credit_limit's format and multipleOf) pass against
// the release they were reviewed for, as notes, and are breaking against any
// other.
func TestReviewedChangesAreTiedToTheirRelease(t *testing.T) {
	t.Parallel()
	base := released(t)
	r, err := compat.Check(base, read(t, "../finsvc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Released != "1.0.0" {
		t.Skipf("newest release is %s: the reviewed changes no longer apply", r.Released)
	}
	n := 0
	for _, note := range r.Notes {
		if strings.Contains(note, "`credit_limit`") && strings.Contains(note, "(reviewed: ") {
			n++
		}
	}
	if n != 4 {
		t.Fatalf("want the 4 reviewed credit_limit changes among the notes:\n%s", r.Report())
	}
	other := strings.Replace(string(base), "version: 1.0.0", "version: 1.0.1", 1)
	if other == string(base) {
		t.Fatal("no version line to change in the released spec")
	}
	r, err = compat.Check([]byte(other), read(t, "../finsvc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() || !strings.Contains(strings.Join(r.Breaking, "\n"), "[request-property-multiple-of-set]") {
		t.Fatalf("against another release the changes must be breaking:\n%s", r.Report())
	}
}

func TestVersionErrors(t *testing.T) {
	t.Parallel()
	base := released(t)
	for v, want := range map[string]string{
		"1.0":        "not MAJOR.MINOR.PATCH",
		"v1.1.0":     "not MAJOR.MINOR.PATCH",
		"1.1.0-rc.1": "not MAJOR.MINOR.PATCH",
		"0.9.0":      "lower than the released",
	} {
		_, err := compat.Check(base, edited(t, func(s *openapi3.T) { s.Info.Version = v }))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("version %s: err = %v, want %q", v, err, want)
		}
	}
}

// The released version names the released document only: the same version
// on a changed document is refused, the release's own bytes pass.
func TestVersionNamesOneContract(t *testing.T) {
	t.Parallel()
	base := released(t)
	spec, err := openapi3.NewLoader().LoadFromData(base)
	if err != nil {
		t.Fatal(err)
	}
	version := spec.Info.Version
	changed := edited(t, func(s *openapi3.T) {
		s.Info.Version = version
	})
	if _, err := compat.Check(base, changed); err == nil || !strings.Contains(err.Error(), "differs from that release") {
		t.Fatalf("a changed contract served as %s: err = %v", version, err)
	}
	if _, err := compat.Check(base, base); err != nil {
		t.Fatalf("the release against itself: %v", err)
	}
}

func TestNewest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"finsvc-1.2.0.yaml", "finsvc-1.10.0.yaml", "finsvc-1.9.3.yaml", "README.md"} {
		if err := os.WriteFile(dir+"/"+name, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := compat.Newest(dir)
	if err != nil || !strings.HasSuffix(got, "finsvc-1.10.0.yaml") {
		t.Fatalf("Newest = %q, %v; want finsvc-1.10.0.yaml (by version, not by name)", got, err)
	}
	if _, err := compat.Newest(t.TempDir()); err == nil {
		t.Fatal("an empty directory gave no error")
	}
}
