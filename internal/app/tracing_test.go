package app_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/testdb"
)

// Tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT) adds nothing to the request
// path: no database callbacks and no server spans; on, both are there, and
// load balancer probes are still not traced.
func TestTracingWiring(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	off := apitest.New(t, apitest.WithDB(testdb.SQLite(t)))
	if off.DB.Callback().Create().Get("otel:before:create") != nil {
		t.Error("tracing off, yet the database has the OpenTelemetry callbacks")
	}

	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	on := apitest.New(t, apitest.WithDB(testdb.SQLite(t)), apitest.WithApp(app.WithTracerProvider(tp)))
	if on.DB.Callback().Create().Get("otel:before:create") == nil {
		t.Error("tracing on, yet the database has no OpenTelemetry callbacks")
	}
	h := on.Server.Config.Handler
	for _, path := range []string{"/healthz", "/metrics"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
	}
	for _, s := range exp.GetSpans() {
		if s.Name == "GET /healthz" || s.Name == "GET /metrics" {
			t.Errorf("probe traced: %s", s.Name)
		}
	}
	acme := on.Tenant("acme")
	acme.Do("GET", "/api/1.0/me", acme.AdminToken(), nil).Status(t, http.StatusOK)
	var server bool
	for _, s := range exp.GetSpans() {
		server = server || s.Name == "GET /api/1.0/me"
	}
	if !server {
		t.Errorf("no server span for GET /api/1.0/me")
	}
}
