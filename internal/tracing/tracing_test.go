package tracing_test

import (
	"context"
	"testing"

	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"

	"github.com/finsvc/finsvc/internal/tracing"
)

func TestEnabled(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_SERVICE_NAME": "x"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "TRUE"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": " None "}, false},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "console"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, false},
	} {
		if got := tracing.Enabled(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("Enabled(%v) = %v, want %v", c.env, got, c.want)
		}
	}
}

// Without an endpoint there is no provider: internal/app then installs nothing.
func TestFromEnvOff(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	tp, shutdown, err := tracing.FromEnv(context.Background(), nil)
	if err != nil || tp != nil {
		t.Fatalf("FromEnv() = %v, %v; want no provider", tp, err)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

func TestFromEnvOn(t *testing.T) {
	// Nothing listens there: the exporter connects only when it exports,
	// and Shutdown's flush has no spans to send.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	tp, shutdown, err := tracing.FromEnv(context.Background(), nil)
	if err != nil || tp == nil {
		t.Fatalf("FromEnv() = %v, %v; want a provider", tp, err)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

func TestServiceName(t *testing.T) {
	for _, c := range []struct{ env, want string }{{"", "finsvc"}, {"finsvc-eu", "finsvc-eu"}} {
		t.Setenv("OTEL_SERVICE_NAME", c.env)
		res, err := tracing.Resource(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		v, _ := res.Set().Value(semconv.ServiceNameKey)
		if v.AsString() != c.want {
			t.Errorf("OTEL_SERVICE_NAME=%q: service.name = %q, want %q", c.env, v.AsString(), c.want)
		}
	}
}
