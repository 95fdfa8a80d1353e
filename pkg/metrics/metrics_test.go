package metrics

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/finsvc/finsvc/pkg/apitest"
	"github.com/finsvc/finsvc/pkg/db"
	"github.com/finsvc/finsvc/pkg/httpapi"
	"github.com/finsvc/finsvc/pkg/testdb"
)

func newEnv(t *testing.T, opts ...apitest.Option) (*apitest.Env, *Metrics) {
	t.Helper()
	var m *Metrics
	opts = append(opts, apitest.WithDeps(func(d *httpapi.Deps) {
		m = New(d.DB)
		d.Auth = Authenticator(d.Auth)
		d.Middleware = append(d.Middleware, m.Middleware())
		d.Routes = append(d.Routes, m.Register)
	}))
	return apitest.New(t, opts...), m
}

// histogramCount returns the observation count of the latency series with
// the given labels (0 when absent).
func histogramCount(t *testing.T, m *Metrics, method, route, status string) uint64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "finsvc_http_request_duration_seconds" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			if labels(mt)["method"] == method && labels(mt)["route"] == route && labels(mt)["status"] == status {
				return mt.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func TestRequestLatencyAndTokenChecks(t *testing.T) {
	env, m := newEnv(t)
	acme := env.Tenant("acme")
	tok := acme.AdminToken()

	valid0 := testutil.ToFloat64(tokenChecks.WithLabelValues(TokenValid))
	invalid0 := testutil.ToFloat64(tokenChecks.WithLabelValues(TokenInvalid))

	okStatus := acme.Do("GET", "/api/1.0/me", tok, nil).Code
	acme.Do("GET", "/api/1.0/me", tok, nil)
	acme.Do("GET", "/api/1.0/me", "not-a-token", nil).Status(t, http.StatusUnauthorized)
	acme.Do("GET", "/api/1.0/clients/12345", "not-a-token", nil).Status(t, http.StatusUnauthorized)
	env.Do("x", "GET", "/healthz", "", nil).Status(t, http.StatusOK)
	acme.Do("GET", "/api/1.0/no-such-thing/42", tok, nil).Status(t, http.StatusNotFound)

	if n := histogramCount(t, m, "GET", "/api/1.0/me", fmt.Sprint(okStatus)); n != 2 {
		t.Fatalf("GET /api/1.0/me %d observed %d times, want 2", okStatus, n)
	}
	if n := histogramCount(t, m, "GET", "/api/1.0/me", "401"); n != 1 {
		t.Fatalf("401 observed %d times, want 1", n)
	}
	// The route pattern, not the raw path with its id.
	if n := histogramCount(t, m, "GET", "/api/1.0/clients/:id", "401"); n != 1 {
		t.Fatalf("route pattern /api/1.0/clients/:id observed %d times, want 1", n)
	}
	if n := histogramCount(t, m, "GET", "/healthz", "200"); n != 1 {
		t.Fatalf("/healthz observed %d times, want 1", n)
	}
	if n := histogramCount(t, m, "GET", "unmatched", "404"); n != 1 {
		t.Fatalf("an unknown path observed %d times as unmatched, want 1", n)
	}
	// Three: the two /me calls and the unknown /api/1.0 path (the bearer
	// check runs before routing decides there is nothing there).
	if d := testutil.ToFloat64(tokenChecks.WithLabelValues(TokenValid)) - valid0; d != 3 {
		t.Fatalf("valid token checks +%v, want +3", d)
	}
	if d := testutil.ToFloat64(tokenChecks.WithLabelValues(TokenInvalid)) - invalid0; d != 2 {
		t.Fatalf("invalid token checks +%v, want +2", d)
	}

	// GET /metrics: any host, the Prometheus text format (validated against
	// the spec by the harness), with every family present.
	resp := env.Do("nobody.example.com", "GET", "/metrics", "", nil).Status(t, http.StatusOK)
	body := string(resp.Body)
	for _, want := range []string{
		`finsvc_http_request_duration_seconds_count{method="GET",route="/api/1.0/me",status="401"} 1`,
		`finsvc_token_checks_total{outcome="valid"}`,
		`finsvc_webhook_deliveries_total{outcome="succeeded"}`,
		"finsvc_outbox_depth 0",
		"go_goroutines",
		"process_resident_memory_bytes",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, "12345") {
		t.Error("a raw path (with an id) became a label")
	}
}

func TestDeliveryOutcomeConcurrent(t *testing.T) {
	before := testutil.ToFloat64(deliveries.WithLabelValues(DeliveryRetry))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				DeliveryOutcome(DeliveryRetry)
			}
		}()
	}
	wg.Wait()
	if d := testutil.ToFloat64(deliveries.WithLabelValues(DeliveryRetry)) - before; d != 800 {
		t.Fatalf("retry deliveries +%v, want +800", d)
	}
	// Every Metrics exposes the shared counters.
	m1, m2 := New(nil), New(nil)
	for _, m := range []*Metrics{m1, m2} {
		if n, err := testutil.GatherAndCount(m.Registry(), "finsvc_webhook_deliveries_total"); err != nil || n != 5 {
			t.Fatalf("deliveries series = %d, %v; want the 5 outcomes", n, err)
		}
	}
}

func TestOutboxDepth(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		_, tn := testdb.NewTenant(t, d, "acme")
		_, other := testdb.NewTenant(t, d, "beta")
		insert := func(tenantID int64, statuses ...string) {
			t.Helper()
			var wid int64 = 1
			if err := d.Exec(`INSERT INTO webhooks (tenant_id, id, event, target, secret_ciphertext, created_by_user_id)
				SELECT ?, ?, 'act.created', 'https://example.com/h', 'x', 1
				WHERE NOT EXISTS (SELECT 1 FROM webhooks WHERE tenant_id = ? AND id = ?)`, tenantID, wid, tenantID, wid).Error; err != nil {
				t.Fatal(err)
			}
			for _, st := range statuses {
				ev := uuid.NewString()
				if err := d.Exec(`INSERT INTO events (tenant_id, id, kind, payload, occurred_at) VALUES (?, ?, 'act.created', '{}', ?)`,
					tenantID, ev, time.Now()).Error; err != nil {
					t.Fatal(err)
				}
				if err := d.Exec(`INSERT INTO deliveries (tenant_id, id, webhook_id, event_id, status) VALUES (?, ?, ?, ?, ?)`,
					tenantID, uuid.NewString(), wid, ev, st).Error; err != nil {
					t.Fatal(err)
				}
			}
		}
		insert(tn.ID, "pending", "delivering", "succeeded", "failed", "cancelled")
		insert(other.ID, "pending") // across tenants

		o := newOutboxDepth(d, 5*time.Second)
		now := time.Now()
		o.nowFunc = func() time.Time { return now }
		if v, ok := o.depth(); !ok || v != 3 {
			t.Fatalf("depth = %v, %v; want 3 (pending + delivering, both tenants)", v, ok)
		}
		insert(tn.ID, "pending")
		if v, _ := o.depth(); v != 3 {
			t.Fatalf("depth = %v within the cache ttl, want the cached 3", v)
		}
		now = now.Add(5 * time.Second)
		if v, _ := o.depth(); v != 4 {
			t.Fatalf("depth = %v after the ttl, want 4", v)
		}
		if n, err := testutil.GatherAndCount(newRegistryWith(o), "finsvc_outbox_depth"); err != nil || n != 1 {
			t.Fatalf("gauge series = %d, %v", n, err)
		}
	})
}

func TestOutboxDepthQueryFailureOmitsGauge(t *testing.T) {
	d := testdb.SQLite(t)
	o := newOutboxDepth(d, time.Second)
	if err := d.Exec(`DROP TABLE deliveries`).Error; err != nil {
		t.Fatal(err)
	}
	reg := newRegistryWith(o)
	if n, err := testutil.GatherAndCount(reg, "finsvc_outbox_depth"); err != nil || n != 0 {
		t.Fatalf("gauge series = %d, %v; want none when the query fails", n, err)
	}
	if v := testutil.ToFloat64(o.errs); v != 1 {
		t.Fatalf("query errors = %v, want 1", v)
	}
}

func newRegistryWith(o *outboxDepth) *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(o)
	return r
}
