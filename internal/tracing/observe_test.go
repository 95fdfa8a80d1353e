package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/finsvc/finsvc/internal/jsonlog"
	"github.com/finsvc/finsvc/internal/tracing"
)

// A line logged with a span's context carries its ids; one without a span
// is written exactly as before.
func TestLogHandler(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter()))
	ctx, span := tp.Tracer("t").Start(context.Background(), "op")
	defer span.End()
	var plain, wrapped bytes.Buffer
	base := slog.New(jsonlog.New(&plain, nil))
	log := slog.New(tracing.LogHandler(jsonlog.New(&wrapped, nil)))
	r := slog.NewRecord(time.Unix(1e9, 0), slog.LevelInfo, "untraced", 0)
	r.AddAttrs(slog.String("k", "v"))
	for _, l := range []*slog.Logger{base, log} {
		if err := l.Handler().Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if plain.String() != wrapped.String() {
		t.Errorf("untraced line changed:\n%s\n%s", plain.String(), wrapped.String())
	}
	wrapped.Reset()
	log.With("component", "x").InfoContext(ctx, "traced", "k", "v")
	var m map[string]any
	if err := json.Unmarshal(wrapped.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	sc := span.SpanContext()
	if m["trace_id"] != sc.TraceID().String() || m["span_id"] != sc.SpanID().String() || m["component"] != "x" {
		t.Errorf("traced line = %v, want trace_id %s span_id %s", m, sc.TraceID(), sc.SpanID())
	}
}

// A collector outage is one structured line per interval, with the count
// of the errors it stands for, not one line per failed export.
func TestErrorHandlerRateLimited(t *testing.T) {
	var buf bytes.Buffer
	h := tracing.ErrorHandler(slog.New(jsonlog.New(&buf, nil)), 1<<62)
	for range 100 {
		h.Handle(errors.New(`Post "http://collector:4318/v1/traces": connection refused`))
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines for 100 errors within the interval, want 1:\n%s", len(lines), buf.String())
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatal(err)
	}
	if m["level"] != "ERROR" || m["component"] != "opentelemetry" || !strings.Contains(m["err"].(string), "connection refused") {
		t.Errorf("line = %v", m)
	}

	buf.Reset()
	h = tracing.ErrorHandler(slog.New(jsonlog.New(&buf, nil)), 0)
	for range 3 {
		h.Handle(errors.New("x"))
	}
	if n := strings.Count(buf.String(), "\n"); n != 3 {
		t.Errorf("%d lines with no interval, want 3", n)
	}
}

// FromEnv sends the SDK's errors to the service's logger.
func TestFromEnvInstallsErrorHandler(t *testing.T) {
	prev := otel.GetErrorHandler()
	t.Cleanup(func() { otel.SetErrorHandler(prev) })
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	var buf bytes.Buffer
	_, shutdown, err := tracing.FromEnv(context.Background(), slog.New(jsonlog.New(&buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = shutdown(context.Background()) }()
	otel.Handle(errors.New("export failed: collector unreachable"))
	if !strings.Contains(buf.String(), `"component":"opentelemetry"`) || !strings.Contains(buf.String(), "collector unreachable") {
		t.Errorf("SDK error not logged through the service's logger: %q", buf.String())
	}
}

// OTEL_TRACES_EXPORTER=none wins over an endpoint: no provider.
func TestFromEnvNone(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	tp, _, err := tracing.FromEnv(context.Background(), nil)
	if err != nil || tp != nil {
		t.Fatalf("FromEnv() = %v, %v; want no provider", tp, err)
	}
	t.Setenv("OTEL_TRACES_EXPORTER", "zipkin-or-so")
	if _, _, err := tracing.FromEnv(context.Background(), nil); err == nil {
		t.Error("an unknown exporter was accepted")
	}
}

func TestPropagators(t *testing.T) {
	t.Setenv("OTEL_PROPAGATORS", "")
	p, err := tracing.Propagators()
	if err != nil || strings.Join(p.Fields(), ",") != "traceparent,tracestate" {
		t.Errorf("default propagators read %v (%v), want tracecontext only", p.Fields(), err)
	}
	t.Setenv("OTEL_PROPAGATORS", "tracecontext, b3")
	if p, err = tracing.Propagators(); err != nil || !strings.Contains(strings.Join(p.Fields(), ","), "b3") {
		t.Errorf("OTEL_PROPAGATORS=tracecontext,b3: %v, %v", p, err)
	}
	t.Setenv("OTEL_PROPAGATORS", "nonsense")
	if _, err := tracing.Propagators(); err == nil {
		t.Error("an unknown propagator was accepted")
	}
}
