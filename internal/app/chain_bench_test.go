package app_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/jsonlog"
	"github.com/finsvc/finsvc/internal/money"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
)

// BenchmarkGetClientChain measures the CPU cost of the middleware chain in
// process (no sockets): GET /api/1.0/clients/{id} through the full server
// (token check answered from memory, as with a warm token cache) against a
// bare echo handler running the same store query and, on PostgreSQL, one
// doing a pgxpool QueryRow of the same row, on PostgreSQL
// (FINSVC_TEST_DATABASE_URL) or SQLite. CPU per request, not ns/op, is
// the figure to compare on a busy machine; instructions per request
// (perf stat, GOMAXPROCS=1, BENCHMARKS.md) the steadiest.
//
//	go test -run - -bench GetClientChain -benchmem ./internal/app
func BenchmarkGetClientChain(b *testing.B) {
	for _, dialect := range testdb.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			d := testdb.Open(b, dialect)
			env := apitest.New(b, apitest.WithDB(d),
				apitest.WithConfig(func(c *config.Config) { c.RateLimitRPS, c.RateLimitBurst = 1e6, 1_000_000 }),
				apitest.WithApp(
					app.WithTenants(tenant.NewStore(d)),                     // production's cached resolver
					app.WithLogger(slog.New(jsonlog.New(io.Discard, nil))))) // production's format (config.NewLogger)
			acme := env.Tenant("acme")
			tok := acme.AdminToken()
			c, err := clients.NewStore(d).Create(acme.Ctx, clients.Input{CompanyName: "Bench AB", OrgNumber: "5560000001", Country: "SE", CreditLimit: money.MustParse("1000.50")})
			if err != nil {
				b.Fatal(err)
			}
			full := env.Server.Config.Handler
			bare := echo.New()
			store := clients.NewStore(d)
			bare.GET("/bare/clients/:id", func(ec echo.Context) error {
				id, _ := strconv.ParseInt(ec.Param("id"), 10, 64)
				cl, err := store.Get(tenant.NewContext(ec.Request().Context(), acme.Tenant), id)
				if err != nil {
					return err
				}
				return ec.JSON(http.StatusOK, cl)
			})
			run := func(b *testing.B, h http.Handler, path string, authz bool) {
				// CPU time of this process per request (server and the
				// in-process client; PostgreSQL's own is outside): unlike
				// ns/op it barely moves with the machine's load.
				cpu0 := processCPU(b)
				defer func() { b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op") }()
				for b.Loop() {
					req := httptest.NewRequest("GET", path, nil)
					req.Host = acme.Host
					if authz {
						req.Header.Set("Authorization", "Bearer "+tok)
					}
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					if w.Code != 200 {
						b.Fatalf("%d %s", w.Code, w.Body)
					}
				}
			}
			b.Run("full", func(b *testing.B) { run(b, full, fmt.Sprintf("/api/1.0/clients/%d", c.ID), true) })
			b.Run("bare", func(b *testing.B) { run(b, bare, fmt.Sprintf("/bare/clients/%d", c.ID), false) })
			if dialect == db.Postgres {
				// The floor: the same row through pgxpool alone (no GORM, no
				// database/sql), the tenant from the Host in a map, as
				// bench's pgx baseline does.
				pooled, _ := testdb.URLs(b, d)
				cfg, err := pgxpool.ParseConfig(pooled)
				if err != nil {
					b.Fatal(err)
				}
				cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec // what internal/db sets
				pool, err := pgxpool.NewWithConfig(b.Context(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(pool.Close)
				hosts := map[string]int64{acme.Host: acme.Tenant.ID}
				bare.GET("/pgx/clients/:id", func(ec echo.Context) error {
					tid, ok := hosts[ec.Request().Host]
					if !ok {
						return ec.NoContent(http.StatusNotFound)
					}
					id, _ := strconv.ParseInt(ec.Param("id"), 10, 64)
					var cl clients.Client
					err := pool.QueryRow(ec.Request().Context(),
						"SELECT tenant_id, id, company_name, org_number, country, credit_limit, name_key, created_at, updated_at FROM clients WHERE tenant_id = $1 AND id = $2",
						tid, id).Scan(&cl.TenantID, &cl.ID, &cl.CompanyName, &cl.OrgNumber, &cl.Country, &cl.CreditLimit, &cl.NameKey, &cl.CreatedAt, &cl.UpdatedAt)
					if err != nil {
						return err
					}
					return ec.JSON(http.StatusOK, &cl)
				})
				b.Run("pgx", func(b *testing.B) { run(b, bare, fmt.Sprintf("/pgx/clients/%d", c.ID), false) })
			}
		})
	}
}

// processCPU is the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
