package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/money"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
)

// BenchmarkTracing compares GET /api/1.0/clients/{id} through the full
// server with tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT: nothing
// installed, the production default) and on (every span recorded and
// handed to an exporter that drops it), on SQLite, in process.
//
//	go test -run '^$' -bench Tracing -benchmem ./internal/app
func BenchmarkTracing(b *testing.B) {
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	b.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	serve := func(b *testing.B, opts ...app.Option) {
		d := testdb.SQLite(b)
		env := apitest.New(b, apitest.WithDB(d),
			apitest.WithConfig(func(c *config.Config) { c.RateLimitRPS, c.RateLimitBurst = 1e6, 1_000_000 }),
			apitest.WithApp(append([]app.Option{
				app.WithTenants(tenant.NewStore(d)),
				app.WithLogger(slog.New(slog.NewJSONHandler(io.Discard, nil)))}, opts...)...))
		acme := env.Tenant("acme")
		tok := acme.AdminToken()
		c, err := clients.NewStore(d).Create(acme.Ctx, clients.Input{CompanyName: "Bench AB", OrgNumber: "5560000001", Country: "SE", CreditLimit: money.MustParse("1000.50")})
		if err != nil {
			b.Fatal(err)
		}
		h, path := env.Server.Config.Handler, fmt.Sprintf("/api/1.0/clients/%d", c.ID)
		b.ReportAllocs()
		for b.Loop() {
			req := httptest.NewRequest("GET", path, nil)
			req.Host = acme.Host
			req.Header.Set("Authorization", "Bearer "+tok)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
		}
	}
	b.Run("off", func(b *testing.B) { serve(b) })
	b.Run("on", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		serve(b, app.WithTracerProvider(tp))
	})
}

// discard drops the spans it is given: the cost measured is making them,
// not sending them.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }
