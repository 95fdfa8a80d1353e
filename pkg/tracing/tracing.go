// Package tracing sets up OpenTelemetry tracing from the standard OTEL_*
// variables and holds the few rules every span of the service follows.
//
// Tracing is off unless an OTLP endpoint is configured
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT): then
// FromEnv returns a nil provider and the composition root (pkg/app)
// installs no middleware and no database callbacks, so an untraced request
// costs nothing. When on, spans go to the OTLP/HTTP exporter, which reads
// the rest of its settings (headers, protocol details, timeouts) from the
// same standard variables, as the SDK does for sampling
// (OTEL_TRACES_SAMPLER) and batching (OTEL_BSP_*). The service name is
// OTEL_SERVICE_NAME, "finsvc" by default.
//
// Where spans are made (ARCHITECTURE.md, "Tracing"): the server span of
// each request (otelecho, pkg/app), database statements (InstrumentDB),
// outbox.Emit, and each webhook delivery attempt (pkg/webhooks/delivery),
// which continues the trace of the request that caused the event through
// the traceparent stored with it.
//
// Spans never carry secrets: no header is recorded (otelecho records the
// method, route, path without the query, host, peer and user agent), and
// SQL is recorded without its parameter values (WithoutQueryVariables), so
// tokens, password hashes and signing secrets, all of which travel as
// parameters, stay out of them.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"
	gormtracing "gorm.io/plugin/opentelemetry/tracing"
)

// DefaultServiceName is service.name unless OTEL_SERVICE_NAME says otherwise.
const DefaultServiceName = "finsvc"

// Propagator reads and writes the W3C traceparent header, the only context
// the service accepts from callers and sends to webhook receivers (no
// baggage: a caller's baggage is not ours to forward).
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Enabled reports whether the environment configures an OTLP trace
// endpoint (and OTEL_SDK_DISABLED is not true).
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// FromEnv builds the tracer provider the OTEL_* variables describe. When
// tracing is off it returns a nil provider and a no-op shutdown. shutdown
// flushes the spans still buffered and must be called once, at exit.
func FromEnv(ctx context.Context) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	if !Enabled(os.Getenv) {
		return nil, func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := Resource(ctx)
	if err != nil {
		return nil, nil, errors.Join(err, exp.Shutdown(ctx))
	}
	p := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return p, p.Shutdown, nil
}

// Resource describes this process: service.name "finsvc" unless
// OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names it otherwise.
func Resource(ctx context.Context) (*resource.Resource, error) {
	env, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("tracing: resource from OTEL_RESOURCE_ATTRIBUTES/OTEL_SERVICE_NAME: %w", err)
	}
	// The environment wins over the default name (Merge prefers its second
	// argument).
	def := resource.NewSchemaless(semconv.ServiceName(DefaultServiceName))
	res, err := resource.Merge(def, env)
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return res, nil
}

// InstrumentDB makes every statement run through gdb a client span of the
// span in its context. The SQL is recorded with placeholders only, never
// the parameter values; the plugin's metrics are left out (the service's
// metrics are Prometheus', pkg/metrics).
func InstrumentDB(gdb *gorm.DB, tp trace.TracerProvider) error {
	err := gdb.Use(gormtracing.NewPlugin(
		gormtracing.WithTracerProvider(tp),
		gormtracing.WithoutQueryVariables(),
		gormtracing.WithoutMetrics(),
	))
	if errors.Is(err, gorm.ErrRegistered) {
		// A handle shared by two Apps (tests, the multi-replica harness)
		// keeps the first App's callbacks.
		return nil
	}
	return err
}
