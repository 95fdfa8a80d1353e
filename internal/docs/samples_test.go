package docs_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	kin "github.com/getkin/kin-openapi/openapi3"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/openapi"
)

// Every operation of the published document carries a curl sample
// (x-codeSamples, shown by /docs beside the operation), and the sample calls
// that operation: its method and its path.
func TestEveryOperationHasCurlSample(t *testing.T) {
	spec, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			n++
			raw, ok := op.Extensions["x-codeSamples"]
			if !ok {
				t.Errorf("%s %s (%s) has no x-codeSamples", method, path, op.OperationID)
				continue
			}
			b, _ := json.Marshal(raw)
			var samples []struct{ Lang, Label, Source string }
			if err := json.Unmarshal(b, &samples); err != nil {
				t.Errorf("%s: x-codeSamples: %v", op.OperationID, err)
				continue
			}
			var src string
			for _, s := range samples {
				if s.Lang == "curl" {
					src = s.Source
				}
			}
			if !strings.HasPrefix(strings.TrimLeft(skipComments(src), " "), "curl ") {
				t.Errorf("%s: no curl sample: %q", op.OperationID, src)
				continue
			}
			if method != "GET" && !strings.Contains(src, "-X "+method+" ") {
				t.Errorf("%s: the sample does not send %s: %q", op.OperationID, method, src)
			}
			prefix := path
			if i := strings.Index(prefix, "{"); i >= 0 {
				prefix = prefix[:i]
			}
			if !strings.Contains(src, "finsvc.example"+prefix) {
				t.Errorf("%s: the sample does not call %s: %q", op.OperationID, path, src)
			}
		}
	}
	if n < 30 {
		t.Fatalf("only %d operations", n)
	}
}

func skipComments(src string) string {
	var out []string
	for _, l := range strings.Split(src, "\n") {
		if !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// The demo's /docs documents the demo tenant's server: the page reads a copy
// of the document whose only server, and the host of every curl sample, is
// the URL the demo passed; the rest is the published document.
func TestDocsServerURL(t *testing.T) {
	const url = "http://demo.localhost:18080"
	env := apitest.New(t, apitest.WithApp(app.WithDocsServerURL(url)))
	page := env.Do("nobody.example.com", "GET", "/docs", "", nil).Status(t, http.StatusOK)
	if !strings.Contains(string(page.Body), `spec-url="/docs/assets/openapi.yaml"`) {
		t.Fatalf("page does not read the instance's document:\n%s", page.Body)
	}
	req, _ := http.NewRequest("GET", env.Server.URL+"/docs/assets/openapi.yaml", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	doc, err := kin.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatalf("the served document does not load: %v", err)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != url {
		t.Fatalf("servers = %+v", doc.Servers)
	}
	published, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	if doc.Paths.Len() != published.Paths.Len() || len(doc.Components.Schemas) != len(published.Components.Schemas) {
		t.Fatal("the served document differs from the published one beyond its server")
	}
	if strings.Contains(string(b), "demo.finsvc.example") || !strings.Contains(string(b), `curl "`+url+`/api/1.0/clients"`) {
		t.Fatal("the curl samples do not address the instance")
	}
	// Without the option the page reads the published document.
	plain := apitest.New(t).Do("nobody.example.com", "GET", "/docs", "", nil).Status(t, http.StatusOK)
	if !strings.Contains(string(plain.Body), `spec-url="/openapi.yaml"`) {
		t.Fatalf("page:\n%s", plain.Body)
	}
}
