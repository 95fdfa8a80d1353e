package app_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/delivery"
)

// An idle service records nothing: the delivery worker polls (here every
// 10 ms, a hundred times) and Prometheus scrapes, and no span is made.
func TestTracingIdleRecordsNothing(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			env := apitest.New(t, apitest.WithDB(testdb.Open(t, dialect)),
				apitest.WithApp(app.WithTracerProvider(tp), app.WithDeliveryOptions(delivery.WithPollInterval(10*time.Millisecond))))
			env.Tenant("acme")
			exp.Reset()
			if err := env.App.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				time.Sleep(350 * time.Millisecond)
				rec := httptest.NewRecorder()
				env.Server.Config.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
				if rec.Code != http.StatusOK {
					t.Fatalf("GET /metrics: %d", rec.Code)
				}
			}
			env.App.Stop()
			if spans := exp.GetSpans(); len(spans) != 0 {
				t.Errorf("idle service made %d spans: %v", len(spans), spanNames(spans))
			}
		})
	}
}

func spanNames(spans tracetest.SpanStubs) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name + " " + s.SpanContext.TraceID().String()
	}
	return out
}

// The standard variables, end to end through a real OTLP/HTTP receiver: an
// endpoint alone exports (otlp is the default exporter);
// OTEL_TRACES_EXPORTER=none exports and records nothing, endpoint or not;
// the sampler variables are the SDK's (always_off: nothing; traceidratio 1:
// everything).
func TestTracingFromEnvironment(t *testing.T) {
	for _, c := range []struct {
		name   string
		env    map[string]string
		export bool
	}{
		{"endpoint", map[string]string{}, true},
		{"otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{"none", map[string]string{"OTEL_TRACES_EXPORTER": "none"}, false},
		{"sdk disabled", map[string]string{"OTEL_SDK_DISABLED": "true"}, false},
		{"always_off", map[string]string{"OTEL_TRACES_SAMPLER": "always_off"}, false},
		{"traceidratio 1", map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var posts atomic.Int64
			collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" {
					posts.Add(1)
				}
				w.WriteHeader(http.StatusOK)
			}))
			defer collector.Close()
			for _, k := range []string{"OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
				"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_PROPAGATORS", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
				t.Setenv(k, "")
			}
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			env := apitest.New(t, apitest.WithDB(testdb.SQLite(t)))
			if got := env.DB.Callback().Create().Get("otel:before:create") != nil; got != c.export && c.name != "always_off" {
				t.Errorf("database instrumented = %v, want %v", got, c.export)
			}
			acme := env.Tenant("acme")
			acme.Do("GET", "/api/1.0/me", acme.AdminToken(), nil).Status(t, http.StatusOK)
			if err := env.App.Close(); err != nil { // flushes the batch
				t.Fatal(err)
			}
			if got := posts.Load() > 0; got != c.export {
				t.Errorf("%d exports to the collector, want exports: %v", posts.Load(), c.export)
			}
		})
	}
}
