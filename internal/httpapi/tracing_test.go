package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/delivery"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// traceReceiver is a webhook endpoint that keeps the traceparent header of
// each delivery.
func traceReceiver(t *testing.T) (*httptest.Server, chan string) {
	got := make(chan string, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("traceparent")
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// tracedEnv starts the service with tracing into an in-memory exporter (tp
// nil: tracing off, as without OTEL_EXPORTER_OTLP_ENDPOINT) and its
// delivery worker woken by emits only.
func tracedEnv(t *testing.T, dialect string, tp trace.TracerProvider) *apitest.Env {
	opts := []app.Option{app.WithDeliveryOptions(delivery.WithPollInterval(time.Hour))}
	if tp != nil {
		opts = append(opts, app.WithTracerProvider(tp))
	}
	env := apitest.New(t, apitest.WithDB(testdb.Open(t, dialect)),
		apitest.WithConfig(func(c *config.Config) { c.Secret = testSecret; c.WebhookAllowPrivate = true }),
		apitest.WithApp(opts...))
	if err := env.App.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.App.Stop)
	return env
}

// fetchWithHook registers an act.fetch_data webhook at target through the
// API, creates an act titled title and requests a fetch of an external
// field; it returns the fetch request, the registration's signing secret
// and the member's token.
func fetchWithHook(t *testing.T, env *apitest.Env, target, title string, h http.Header) (models.FetchRequest, string, string) {
	f := newActFixture(t, env, "acme")
	tok := f.Token(f.member, auth.ScopeActsRead, auth.ScopeActsWrite, auth.ScopeWebhooksRead, auth.ScopeWebhooksWrite)
	f.tok = tok
	var wh models.WebhookWithSecret
	f.Do("POST", "/api/1.0/webhooks", tok, map[string]any{"event": outbox.ActFetchData, "target": target}).Status(t, 201).Decode(t, &wh)
	a := f.createAct(t, title)
	var fr models.FetchRequest
	f.DoHeader("POST", "/api/1.0/acts/"+a.Uuid.String()+"/fetch-requests", tok,
		map[string]any{"data_point_ids": f.ids(t, a, "revenue")}, h).Status(t, http.StatusCreated).Decode(t, &fr)
	return fr, wh.Secret, tok
}

func nextTraceparent(t *testing.T, got chan string) string {
	t.Helper()
	select {
	case tp := <-got:
		return tp
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery arrived")
	}
	return ""
}

// One fetch request is one trace: the server span of the POST, the
// database statements and the outbox emit under it, and the delivery
// attempt as a child of the emit, whose context the receiver gets in
// traceparent. No span carries the token, the signing secret, a header
// or an SQL parameter value.
func TestTracingFetchRequestIsOneTrace(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			env := tracedEnv(t, dialect, tp)
			rcv, got := traceReceiver(t)

			// A marker that travels only as an SQL parameter (the title).
			const marker = "Quarterly-review-9f3c1e"
			_, secret, tok := fetchWithHook(t, env, rcv.URL+"/hook", marker, nil)
			header := nextTraceparent(t, got)

			spans := exp.GetSpans
			var server, emit, deliver tracetest.SpanStub
			// The attempt's span ends after the receiver answered: poll.
			for deadline := time.Now().Add(30 * time.Second); deliver.Name == "" && time.Now().Before(deadline); {
				for _, s := range spans() {
					if s.Name == "webhook.deliver" {
						deliver = s
					}
				}
				if deliver.Name == "" {
					time.Sleep(20 * time.Millisecond)
				}
			}
			if deliver.Name == "" {
				t.Fatal("no webhook.deliver span")
			}
			for _, s := range spans() {
				switch {
				case s.Name == "POST /api/1.0/acts/:act_uuid/fetch-requests":
					server = s
				case s.Name == "outbox.emit" && attr(s, "finsvc.event.kind") == outbox.ActFetchData:
					emit = s
				}
			}
			if server.Name == "" || server.SpanKind != trace.SpanKindServer {
				t.Fatalf("no server span for the fetch request; spans: %v", names(spans()))
			}
			traceID := server.SpanContext.TraceID()
			if emit.Name == "" || emit.SpanContext.TraceID() != traceID {
				t.Fatalf("outbox.emit span %+v is not in the request's trace %s", emit.SpanContext, traceID)
			}
			if deliver.SpanContext.TraceID() != traceID || deliver.Parent.SpanID() != emit.SpanContext.SpanID() {
				t.Errorf("delivery span (trace %s, parent %s) is not a child of the emit (trace %s, span %s)",
					deliver.SpanContext.TraceID(), deliver.Parent.SpanID(), traceID, emit.SpanContext.SpanID())
			}
			if attr(deliver, "finsvc.delivery.outcome") != string(delivery.Succeeded) || attr(deliver, "http.response.status_code") != "202" {
				t.Errorf("delivery span attributes = %v", deliver.Attributes)
			}
			want := "00-" + traceID.String() + "-" + deliver.SpanContext.SpanID().String() + "-01"
			if header != want {
				t.Errorf("receiver's traceparent = %q, want %q (the attempt's span in the request's trace)", header, want)
			}
			var dbSpans int
			for _, s := range spans() {
				if strings.HasPrefix(s.Name, "gorm.") && s.SpanContext.TraceID() == traceID {
					dbSpans++
				}
			}
			if dbSpans == 0 {
				t.Errorf("no database span in the request's trace; spans: %v", names(spans()))
			}

			// Nothing secret in any span: not the token, the secret, the
			// Authorization header, nor the parameter value.
			for _, s := range spans() {
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
					for _, bad := range []string{tok, secret, marker, "Bearer", "authorization", "Authorization"} {
						if strings.Contains(x, bad) {
							t.Errorf("span %q carries %q: %s", s.Name, bad, x)
						}
					}
				}
			}
		})
	}
}

// Tracing off: no span anywhere, and an incoming traceparent is ignored
// (nothing extracts it), so deliveries carry none.
func TestTracingOffSendsNoTraceparent(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := tracedEnv(t, dialect, nil)
			rcv, got := traceReceiver(t)
			h := http.Header{"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
			fetchWithHook(t, env, rcv.URL+"/hook", "Review", h)
			if tp := nextTraceparent(t, got); tp != "" {
				t.Errorf("traceparent = %q with tracing off, want none", tp)
			}
			var n int64
			if err := env.DB.Table("events").Where("traceparent IS NOT NULL").Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%d events keep a traceparent with tracing off", n)
			}
		})
	}
}

func attr(s tracetest.SpanStub, key string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

func names(spans tracetest.SpanStubs) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	return out
}
