package metrics_test

// The metrics as the service serves them: through the whole chain that
// internal/app assembles (an external test package, since app imports metrics).

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/metrics"
)

// newEnv is the whole service (internal/app wires metrics in as production
// does) and its registry.
func newEnv(t *testing.T, opts ...apitest.Option) (*apitest.Env, *metrics.Metrics) {
	t.Helper()
	env := apitest.New(t, opts...)
	return env, env.App.Metrics()
}

// tokenChecks returns the finsvc_token_checks_total series of outcome.
func tokenChecks(t *testing.T, m *metrics.Metrics, outcome string) float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "finsvc_token_checks_total" {
			continue
		}
		for _, s := range mf.GetMetric() {
			if labels(s)["outcome"] == outcome {
				return s.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// histogramCount returns the observation count of the latency series with
// the given labels (0 when absent).
func histogramCount(t *testing.T, m *metrics.Metrics, method, route, status string) uint64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "finsvc_http_request_duration_seconds" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			if labels(mt)["method"] == method && labels(mt)["route"] == route && labels(mt)["status"] == status {
				return mt.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func TestRequestLatencyAndTokenChecks(t *testing.T) {
	env, m := newEnv(t)
	acme := env.Tenant("acme")
	tok := acme.AdminToken()

	valid0 := tokenChecks(t, m, metrics.TokenValid)
	invalid0 := tokenChecks(t, m, metrics.TokenInvalid)

	okStatus := acme.Do("GET", "/api/1.0/me", tok, nil).Code
	acme.Do("GET", "/api/1.0/me", tok, nil)
	acme.Do("GET", "/api/1.0/me", "not-a-token", nil).Status(t, http.StatusUnauthorized)
	acme.Do("GET", "/api/1.0/clients/12345", "not-a-token", nil).Status(t, http.StatusUnauthorized)
	env.Do("x", "GET", "/healthz", "", nil).Status(t, http.StatusOK)
	acme.Do("GET", "/api/1.0/no-such-thing/42", tok, nil).Status(t, http.StatusNotFound)

	if n := histogramCount(t, m, "GET", "/api/1.0/me", fmt.Sprint(okStatus)); n != 2 {
		t.Fatalf("GET /api/1.0/me %d observed %d times, want 2", okStatus, n)
	}
	if n := histogramCount(t, m, "GET", "/api/1.0/me", "401"); n != 1 {
		t.Fatalf("401 observed %d times, want 1", n)
	}
	// The route pattern, not the raw path with its id.
	if n := histogramCount(t, m, "GET", "/api/1.0/clients/:id", "401"); n != 1 {
		t.Fatalf("route pattern /api/1.0/clients/:id observed %d times, want 1", n)
	}
	if n := histogramCount(t, m, "GET", "/healthz", "200"); n != 1 {
		t.Fatalf("/healthz observed %d times, want 1", n)
	}
	if n := histogramCount(t, m, "GET", "unmatched", "404"); n != 1 {
		t.Fatalf("an unknown path observed %d times as unmatched, want 1", n)
	}
	// Three: the two /me calls and the unknown /api/1.0 path (the bearer
	// check runs before routing decides there is nothing there).
	if d := tokenChecks(t, m, metrics.TokenValid) - valid0; d != 3 {
		t.Fatalf("valid token checks +%v, want +3", d)
	}
	if d := tokenChecks(t, m, metrics.TokenInvalid) - invalid0; d != 2 {
		t.Fatalf("invalid token checks +%v, want +2", d)
	}

	// GET /metrics: any host, the Prometheus text format (validated against
	// the spec by the harness), with every family present.
	resp := env.Do("nobody.example.com", "GET", "/metrics", "", nil).Status(t, http.StatusOK)
	body := string(resp.Body)
	for _, want := range []string{
		`finsvc_http_request_duration_seconds_count{method="GET",route="/api/1.0/me",status="401"} 1`,
		`finsvc_token_checks_total{outcome="valid"}`,
		`finsvc_webhook_deliveries_total{outcome="succeeded"}`,
		"finsvc_outbox_depth 0",
		"go_goroutines",
		"process_resident_memory_bytes",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, "12345") {
		t.Error("a raw path (with an id) became a label")
	}
}

// TestInventedMethodsShareOneSeries: a method the service does not know is
// labelled "other", however many a client invents, and cached series are
// the registry's own (concurrent requests on one series count them all).
func TestInventedMethodsShareOneSeries(t *testing.T) {
	env, m := newEnv(t)
	for i := range 5 {
		req, _ := http.NewRequest(fmt.Sprintf("BREW%d", i), env.Server.URL+"/healthz", nil)
		if code := env.Send("x", req).Code; code != http.StatusNotFound {
			t.Fatalf("BREW%d /healthz: %d", i, code)
		}
	}
	if n := histogramCount(t, m, "other", "unmatched", "404"); n != 5 {
		t.Fatalf(`invented methods on /healthz observed %d times as "other", want 5`, n)
	}
	for i := range 5 {
		if n := histogramCount(t, m, fmt.Sprintf("BREW%d", i), "unmatched", "404"); n != 0 {
			t.Fatalf("method BREW%d became a label", i)
		}
	}
	done := make(chan struct{})
	for range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 25 {
				env.Do("x", "GET", "/healthz", "", nil)
			}
		}()
	}
	for range 8 {
		<-done
	}
	if n := histogramCount(t, m, "GET", "/healthz", "200"); n != 200 {
		t.Fatalf("GET /healthz observed %d times from 8 racing clients, want 200", n)
	}
}
