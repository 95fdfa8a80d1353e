package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/jsonlog"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/delivery"
)

// jsonLines collects log lines written concurrently.
type jsonLines struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *jsonLines) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines returns the JSON lines written so far.
func (s *jsonLines) lines(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(s.b.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %s", sc.Text())
		}
		out = append(out, m)
	}
	return out
}

// observedEnv is tracedEnv with the production log format written to logs.
func observedEnv(t *testing.T, dialect string, tp trace.TracerProvider, logs *jsonLines) *apitest.Env {
	env := apitest.New(t, apitest.WithDB(testdb.Open(t, dialect)),
		apitest.WithConfig(func(c *config.Config) { c.Secret = testSecret; c.WebhookAllowPrivate = true }),
		apitest.WithApp(app.WithDeliveryOptions(delivery.WithPollInterval(time.Hour)), app.WithTracerProvider(tp),
			app.WithLogger(slog.New(jsonlog.New(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))))
	if err := env.App.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.App.Stop)
	return env
}

// waitSpan polls for a span that ok accepts (spans end after the receiver
// answered).
func waitSpan(t *testing.T, exp *tracetest.InMemoryExporter, ok func(tracetest.SpanStub) bool) tracetest.SpanStub {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, s := range exp.GetSpans() {
			if ok(s) {
				return s
			}
		}
	}
	t.Fatalf("no such span; spans: %v", names(exp.GetSpans()))
	return tracetest.SpanStub{}
}

// A caller's sampled traceparent is continued by the server span, which
// names the tenant; the delivery the request caused is one span whose
// children are every statement of that delivery, and no statement anywhere
// is a trace of its own. The request's access line carries the ids of the
// server span.
func TestTracingDeliveryTree(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			var logs jsonLines
			env := observedEnv(t, dialect, tp, &logs)
			rcv, got := traceReceiver(t)

			const caller, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
			h := http.Header{"Traceparent": {"00-" + caller + "-" + callerSpan + "-01"}}
			fetchWithHook(t, env, rcv.URL+"/hook", "Review", h)
			nextTraceparent(t, got)
			deliver := waitSpan(t, exp, func(s tracetest.SpanStub) bool { return s.Name == "webhook.deliver" })
			server := waitSpan(t, exp, func(s tracetest.SpanStub) bool {
				return s.Name == "POST /api/1.0/acts/:act_uuid/fetch-requests"
			})

			if server.SpanContext.TraceID().String() != caller || server.Parent.SpanID().String() != callerSpan || !server.Parent.IsRemote() {
				t.Errorf("server span (trace %s, parent %s) does not continue the caller's %s-%s",
					server.SpanContext.TraceID(), server.Parent.SpanID(), caller, callerSpan)
			}
			if deliver.SpanContext.TraceID().String() != caller {
				t.Errorf("delivery span in trace %s, want the caller's %s", deliver.SpanContext.TraceID(), caller)
			}
			for _, s := range []tracetest.SpanStub{server, deliver} {
				if attr(s, "finsvc.tenant") != "acme" {
					t.Errorf("span %q: finsvc.tenant = %q, want acme", s.Name, attr(s, "finsvc.tenant"))
				}
			}

			var children []string
			for _, s := range exp.GetSpans() {
				// From the request on (the fixture seeds the database
				// directly before it), no statement is a root.
				if strings.HasPrefix(s.Name, "gorm.") && !s.Parent.IsValid() && !s.StartTime.Before(server.StartTime) {
					t.Errorf("a database statement is a trace of its own: %s %s", s.Name, attr(s, "db.query.text"))
				}
				if s.Parent.SpanID() == deliver.SpanContext.SpanID() {
					children = append(children, s.Name+": "+attr(s, "db.query.text"))
					if s.StartTime.Before(deliver.StartTime) || s.EndTime.After(deliver.EndTime) {
						t.Errorf("child %q is outside its delivery span's time", s.Name)
					}
				}
			}
			// The load, the outcome and the endpoint's health at least.
			if len(children) < 3 || !strings.Contains(children[0], "FROM deliveries d") {
				t.Errorf("delivery span's children = %q, want the load first and the writes after it", children)
			}

			var access bool
			for _, l := range logs.lines(t) {
				if l["msg"] == "request" && l["route"] == "/api/1.0/acts/:act_uuid/fetch-requests" {
					access = true
					if l["trace_id"] != caller || l["span_id"] != server.SpanContext.SpanID().String() {
						t.Errorf("access line's ids = %v/%v, want the server span's %s/%s", l["trace_id"], l["span_id"], caller, server.SpanContext.SpanID())
					}
				}
			}
			if !access {
				t.Error("no access line for the fetch request")
			}
		})
	}
}

// A failed delivery's span says why without naming the target: no host,
// port, path or query (which may hold an integrator's token) in any span,
// and the delivery's log line carries the span's ids.
func TestTracingFailedDeliveryNamesNoTarget(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			var logs jsonLines
			env := observedEnv(t, dialect, tp, &logs)

			// A port nobody listens on: the attempt is refused.
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			hostPort := l.Addr().String()
			_ = l.Close()
			const pathSecret, queryToken = "p4th-s3cret-71", "qt0ken-93be"
			target := "http://" + hostPort + "/" + pathSecret + "?token=" + queryToken
			_, secret, tok := fetchWithHook(t, env, target, "Review", nil)

			deliver := waitSpan(t, exp, func(s tracetest.SpanStub) bool {
				return s.Name == "webhook.deliver" && attr(s, "finsvc.delivery.outcome") == string(delivery.Retrying)
			})
			if deliver.Status.Description != "connection refused" {
				t.Errorf("status = %q, want connection refused", deliver.Status.Description)
			}
			_, port, _ := net.SplitHostPort(hostPort)
			for _, s := range exp.GetSpans() {
				texts := []string{s.Name, s.Status.Description}
				for _, a := range s.Attributes {
					texts = append(texts, string(a.Key)+"="+a.Value.String())
				}
				for _, e := range s.Events {
					texts = append(texts, e.Name)
					for _, a := range e.Attributes {
						texts = append(texts, a.Value.String())
					}
				}
				for _, x := range texts {
					for _, bad := range []string{hostPort, ":" + port, pathSecret, queryToken, tok, secret, "Bearer"} {
						if strings.Contains(x, bad) {
							t.Errorf("span %q carries %q: %s", s.Name, bad, x)
						}
					}
				}
			}
			var line bool
			for _, l := range logs.lines(t) {
				if l["msg"] == "delivery attempt" {
					line = true
					if l["trace_id"] != deliver.SpanContext.TraceID().String() || l["span_id"] != deliver.SpanContext.SpanID().String() {
						t.Errorf("delivery line's ids = %v/%v, want the delivery span's", l["trace_id"], l["span_id"])
					}
				}
				for _, bad := range []string{tok, secret} {
					if strings.Contains(fmt.Sprint(l), bad) {
						t.Errorf("log line carries %q: %v", bad, l)
					}
				}
			}
			if !line {
				t.Error("no log line for the failed attempt")
			}
		})
	}
}
