// Package tracing sets up OpenTelemetry tracing from the standard OTEL_*
// variables and holds the few rules every span of the service follows.
//
// Tracing is on when the environment asks for an exporter: an OTLP
// endpoint (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
// or OTEL_TRACES_EXPORTER set to an exporter. It is off when nothing asks,
// when OTEL_TRACES_EXPORTER is "none" and when OTEL_SDK_DISABLED is true:
// then FromEnv returns a nil provider and the composition root (internal/app)
// installs no middleware and no database callbacks, so an untraced request
// costs nothing. When on, the exporter is the one OTEL_TRACES_EXPORTER names
// (otlp by default, or console), built by the contrib autoexport package,
// which reads the rest of its settings (protocol, headers, timeouts) from
// the same standard variables; the SDK reads the sampler
// (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG) and batching (OTEL_BSP_*).
// The service name is OTEL_SERVICE_NAME, "finsvc" by default. Incoming
// trace context is read by the propagators OTEL_PROPAGATORS names, W3C
// tracecontext only by default (Propagators).
//
// Exporter errors (a collector that is down) go to the service's
// structured logger, at most one line per ErrorLogInterval with the count
// of the errors it stands for (ErrorHandler).
//
// Where spans are made (ARCHITECTURE.md, "Tracing"): the server span of
// each request (otelecho, internal/app), database statements (InstrumentDB),
// outbox.Emit, and each webhook delivery (internal/webhooks/delivery), which
// continues the trace of the request that caused the event through the
// traceparent stored with it. Background polls and maintenance make none
// (package suppress).
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
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/contrib/propagators/autoprop"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"
	gormtracing "gorm.io/plugin/opentelemetry/tracing"

	"github.com/finsvc/finsvc/internal/tracing/suppress"
)

// DefaultServiceName is service.name unless OTEL_SERVICE_NAME says otherwise.
const DefaultServiceName = "finsvc"

// Propagator reads and writes the W3C traceparent header, the context the
// service sends to webhook receivers and stores with events (no baggage: a
// caller's baggage is not ours to forward).
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Propagators is what reads a caller's trace context: the propagators
// OTEL_PROPAGATORS names (tracecontext, baggage, b3, b3multi, jaeger, xray,
// ottrace, none), or Propagator when it is unset.
func Propagators() (propagation.TextMapPropagator, error) {
	env := strings.TrimSpace(os.Getenv("OTEL_PROPAGATORS"))
	if env == "" {
		return Propagator, nil
	}
	names := strings.Split(env, ",")
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	p, err := autoprop.TextMapPropagator(names...)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTEL_PROPAGATORS: %w", err)
	}
	return p, nil
}

// Enabled reports whether the environment asks for a trace exporter (and
// OTEL_SDK_DISABLED is not true and OTEL_TRACES_EXPORTER is not none).
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch exp := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))); exp {
	case "none":
		return false
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	default:
		return true
	}
}

// FromEnv builds the tracer provider the OTEL_* variables describe and
// sends the SDK's errors to log (ErrorHandler). When tracing is off it
// returns a nil provider and a no-op shutdown. shutdown flushes the spans
// still buffered and must be called once, at exit.
func FromEnv(ctx context.Context, log *slog.Logger) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	off := func(context.Context) error { return nil }
	if !Enabled(os.Getenv) {
		return nil, off, nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: OTEL_TRACES_EXPORTER: %w", err)
	}
	if autoexport.IsNoneSpanExporter(exp) {
		return nil, off, nil
	}
	res, err := Resource(ctx)
	if err != nil {
		return nil, nil, errors.Join(err, exp.Shutdown(ctx))
	}
	if log != nil {
		otel.SetErrorHandler(ErrorHandler(log, ErrorLogInterval))
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

// ErrorLogInterval is the most often the SDK's errors are logged.
const ErrorLogInterval = time.Minute

// ErrorHandler logs the SDK's errors (an exporter that cannot reach its
// collector retries every few seconds) as structured lines on log, at most
// one per every: the first error at once, then one line per interval with
// the latest error and how many it stands for. Messages name the
// collector's endpoint, an operator's setting, never a request's data.
func ErrorHandler(log *slog.Logger, every time.Duration) otel.ErrorHandler {
	return &errorHandler{log: log.With("component", "opentelemetry"), every: every, now: time.Now}
}

type errorHandler struct {
	log   *slog.Logger
	every time.Duration
	now   func() time.Time

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func (h *errorHandler) Handle(err error) {
	h.mu.Lock()
	now := h.now()
	if !h.last.IsZero() && now.Sub(h.last) < h.every {
		h.suppressed++
		h.mu.Unlock()
		return
	}
	n := h.suppressed + 1
	h.last, h.suppressed = now, 0
	h.mu.Unlock()
	h.log.Error("tracing: export failed", "err", err.Error(), "errors", n)
}

// InstrumentDB makes every statement run through gdb a client span of the
// span in its context, except in a context marked by suppress.Context. The
// SQL is recorded with placeholders only, never the parameter values; the
// plugin's metrics are left out (the service's metrics are Prometheus',
// internal/metrics).
func InstrumentDB(gdb *gorm.DB, tp trace.TracerProvider) error {
	err := gdb.Use(gormtracing.NewPlugin(
		gormtracing.WithTracerProvider(quietProvider{tp}),
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

// quietProvider's tracers start no span in a suppressed context.
type quietProvider struct{ trace.TracerProvider }

func (p quietProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return quietTracer{Tracer: p.TracerProvider.Tracer(name, opts...)}
}

type quietTracer struct{ trace.Tracer }

func (t quietTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if suppress.Active(ctx) {
		// A span that records nothing and whose End does nothing, in the
		// context too: the plugin ends the span it finds there, which must
		// not be the caller's.
		span := trace.SpanFromContext(context.Background())
		return trace.ContextWithSpan(ctx, span), span
	}
	return t.Tracer.Start(ctx, name, opts...)
}
