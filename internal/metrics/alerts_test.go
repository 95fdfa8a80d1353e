package metrics_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/metrics"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/delivery"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// value is the value of the series of name whose labels include want (the
// sum over them), and whether any exists.
func value(t *testing.T, g prometheus.Gatherer, name string, want map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	var found bool
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, s := range mf.GetMetric() {
			got := labels(s)
			for k, w := range want {
				if got[k] != w {
					continue series
				}
			}
			found = true
			switch {
			case s.Counter != nil:
				v += s.GetCounter().GetValue()
			case s.Gauge != nil:
				v += s.GetGauge().GetValue()
			}
		}
	}
	return v, found
}

// An aged outbox row moves the age the backlog alert reads; the pool's
// statistics are served.
func TestAgedOutboxRow(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		d := env.DB
		if err := d.Exec(`INSERT INTO webhooks (tenant_id, id, event, target, secret_ciphertext, created_by_user_id)
			VALUES (?, 1, 'act.created', 'https://example.com/h', 'x', 1)`, acme.Tenant.ID).Error; err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		// Due ten minutes ago; and one scheduled for later, which is not
		// waiting for a worker and must not count.
		for _, at := range []time.Time{now.Add(-10 * time.Minute), now.Add(time.Hour)} {
			ev := uuid.NewString()
			if err := d.Exec(`INSERT INTO events (tenant_id, id, kind, payload, occurred_at) VALUES (?, ?, 'act.created', '{}', ?)`,
				acme.Tenant.ID, ev, now.Add(-time.Hour)).Error; err != nil {
				t.Fatal(err)
			}
			if err := d.Exec(`INSERT INTO deliveries (tenant_id, id, webhook_id, event_id, status, next_attempt_at, created_at, updated_at)
				VALUES (?, ?, 1, ?, 'pending', ?, ?, ?)`, acme.Tenant.ID, uuid.NewString(), ev, at, now.Add(-time.Hour), now.Add(-time.Hour)).Error; err != nil {
				t.Fatal(err)
			}
		}
		reg := env.App.Metrics().Registry()
		age, ok := value(t, reg, "finsvc_outbox_oldest_pending_age_seconds", nil)
		if !ok || age < 600 || age > 900 {
			t.Errorf("finsvc_outbox_oldest_pending_age_seconds = %v (%v), want about 600", age, ok)
		}
		if depth, _ := value(t, reg, "finsvc_outbox_depth", nil); depth != 2 {
			t.Errorf("finsvc_outbox_depth = %v, want 2", depth)
		}
		if n, _ := value(t, reg, "finsvc_webhook_endpoints", map[string]string{"state": "healthy"}); n != 1 {
			t.Errorf("healthy endpoints = %v, want 1", n)
		}
		if _, ok := value(t, reg, "go_sql_open_connections", map[string]string{"db_name": "finsvc"}); !ok {
			t.Error("no database pool statistics")
		}
	})
}

// A failing endpoint moves what the endpoint alerts read: failures by
// reason, then an open circuit (backing_off) and a failure run that lasts.
func TestFailingEndpoint(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		hits := make(chan struct{}, 16)
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			hits <- struct{}{}
		}))
		defer rcv.Close()
		if err := env.App.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(env.App.Stop)
		acme := env.Tenant("acme")
		tok := acme.AdminToken()
		var wh models.WebhookWithSecret
		acme.Do("POST", "/api/1.0/webhooks", tok, map[string]any{"event": outbox.ActFetchData, "target": rcv.URL + "/hook"}).Status(t, 201).Decode(t, &wh)

		global := metrics.New(nil).Registry() // the package-level counters alone
		before, _ := value(t, global, "finsvc_webhook_delivery_failures_total", map[string]string{"reason": delivery.ReasonStatus5xx})
		for i := range outbox.TripAfter {
			acme.Do("POST", "/api/1.0/webhooks/"+strconv.FormatInt(int64(wh.Id), 10)+"/test", tok, nil).Status(t, http.StatusAccepted)
			select {
			case <-hits:
			case <-time.After(30 * time.Second):
				t.Fatalf("attempt %d did not arrive", i+1)
			}
		}
		reg := env.App.Metrics().Registry()
		deadline := time.Now().Add(30 * time.Second)
		for {
			after, _ := value(t, global, "finsvc_webhook_delivery_failures_total", map[string]string{"reason": delivery.ReasonStatus5xx})
			if after-before == float64(outbox.TripAfter) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("failures{reason=status_5xx} moved by %v, want %d", after-before, outbox.TripAfter)
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(10 * time.Millisecond) // the failure run lasts a little
		if n, _ := value(t, reg, "finsvc_webhook_endpoints", map[string]string{"state": "backing_off"}); n != 1 {
			t.Errorf("backing_off endpoints = %v, want 1", n)
		}
		if s, _ := value(t, reg, "finsvc_webhook_endpoint_longest_failure_seconds", nil); s <= 0 {
			t.Errorf("finsvc_webhook_endpoint_longest_failure_seconds = %v, want > 0", s)
		}
	}, apitest.WithConfig(func(c *config.Config) { c.WebhookAllowPrivate = true }),
		apitest.WithApp(app.WithDeliveryOptions(delivery.WithPollInterval(time.Hour))))
}

// metricRef finds the service's metric names in a PromQL expression.
var metricRef = regexp.MustCompile(`\b(finsvc_[a-z0-9_]+|go_sql_[a-z0-9_]+)`)

// served checks that every metric expr names is served by the registry
// (a histogram's _bucket, _sum and _count by its family).
func served(t *testing.T, names map[string]bool, where, expr string) int {
	t.Helper()
	refs := metricRef.FindAllString(expr, -1)
	for _, n := range refs {
		base := n
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(n, suf); ok && names[b] {
				base = b
			}
		}
		if !names[base] {
			t.Errorf("%s: metric %s is not served by the service", where, n)
		}
	}
	return len(refs)
}

func repoFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The alert rules and the dashboard that ship name only metrics the
// service serves, so that neither can drift from internal/metrics; every alert
// has a runbook entry.
func TestDeployReferencesExistingMetrics(t *testing.T) {
	names := metrics.New(testdb.SQLite(t)).Names()

	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(repoFile(t, "deploy/prometheus/finsvc-alerts.yml"), &rules); err != nil {
		t.Fatal(err)
	}
	runbook := string(repoFile(t, "docs/operations.md"))
	var alerts int
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts++
			if served(t, names, r.Alert, r.Expr) == 0 {
				t.Errorf("%s: expression names no metric of the service", r.Alert)
			}
			for k, a := range r.Annotations {
				served(t, names, r.Alert+" "+k, a)
			}
			if !strings.Contains(runbook, "### "+r.Alert+"\n") {
				t.Errorf("%s: no runbook entry (### %s) in docs/operations.md", r.Alert, r.Alert)
			}
			if want := "docs/operations.md#" + strings.ToLower(r.Alert); r.Annotations["runbook"] != want {
				t.Errorf("%s: runbook annotation %q, want %q", r.Alert, r.Annotations["runbook"], want)
			}
		}
	}
	if alerts < 5 {
		t.Errorf("%d alerts, want at least the five the operations guide describes", alerts)
	}

	type panel struct {
		ID         int    `json:"id"`
		Type       string `json:"type"`
		Title      string `json:"title"`
		Datasource *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		GridPos struct{ H, W, X, Y int } `json:"gridPos"`
	}
	var dash struct {
		UID        string  `json:"uid"`
		Title      string  `json:"title"`
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	raw := repoFile(t, "deploy/grafana/finsvc.json")
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard is not valid JSON: %v", err)
	}
	// Grafana's dashboard schema, as its foundation SDK (generated from
	// Grafana's schemas) decodes it strictly: no unknown field, no missing
	// required one, every panel's options and queries of their plugin's
	// types.
	plugins.RegisterDefaultPlugins()
	//lint:ignore SA1019 the file is the classic dashboard JSON that every Grafana imports, not the v2 resource
	var schema dashboard.Dashboard
	if err := schema.UnmarshalJSONStrict(raw); err != nil {
		if errs, ok := err.(cog.BuildErrors); !ok || len(errs) > 0 {
			t.Errorf("dashboard does not follow Grafana's schema: %v", err)
		}
	}
	if err := schema.Validate(); err != nil {
		t.Errorf("dashboard does not validate: %v", err)
	}
	if dash.UID == "" || dash.Title == "" || len(dash.Panels) == 0 {
		t.Fatalf("dashboard without uid, title or panels")
	}
	used := map[string]bool{}
	ids := map[int]bool{}
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: grid position %+v outside the 24 columns", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: no query on the dashboard's data source", p.Title)
		}
		for _, q := range p.Targets {
			if served(t, names, "panel "+p.Title, q.Expr) == 0 {
				t.Errorf("panel %q: query %q names no metric of the service", p.Title, q.Expr)
			}
			for _, n := range metricRef.FindAllString(q.Expr, -1) {
				used[n] = true
			}
		}
	}
	for _, v := range dash.Templating.List {
		served(t, names, "variable "+v.Name, v.Definition)
	}
	// What the dashboard must show.
	for _, m := range []string{"finsvc_http_request_duration_seconds_count", "finsvc_http_request_duration_seconds_bucket",
		"finsvc_outbox_depth", "finsvc_outbox_oldest_pending_age_seconds", "finsvc_webhook_deliveries_total",
		"finsvc_webhook_delivery_failures_total", "finsvc_webhook_endpoints", "finsvc_rate_limited_total",
		"finsvc_token_checks_total", "go_sql_in_use_connections"} {
		if !used[m] {
			t.Errorf("the dashboard shows no %s", m)
		}
	}
}
