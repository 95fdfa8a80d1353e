package metrics_test

// The picture of the shipped dashboard in docs/: the service under a mixed
// load (reads, writes, refusals, a receiver that answers and one that
// fails), scraped by a real Prometheus every second, and every panel of
// deploy/grafana/finsvc.json drawn from its own query, evaluated by that
// Prometheus. Grafana itself is not packaged for the machines that build
// finsvc, so the panels are laid out and drawn here (gridPos, one line per
// series, a stat's last value) and photographed in Chromium. Opt-in: it
// runs for minutes and needs a Prometheus binary.
//
//	FINSVC_DASHBOARD_SHOT=docs FINSVC_PROMETHEUS=/path/to/prometheus \
//	  go test -run TestDashboardScreenshot -timeout 10m ./internal/metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/web/browsertest"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

func TestDashboardScreenshot(t *testing.T) {
	out := os.Getenv("FINSVC_DASHBOARD_SHOT")
	if out == "" {
		t.Skip("FINSVC_DASHBOARD_SHOT (an output folder) turns on the dashboard picture")
	}
	if !filepath.IsAbs(out) {
		out = filepath.Join("..", "..", out) // relative to the repository, like the other deploy files
	}
	prom := os.Getenv("FINSVC_PROMETHEUS")
	if prom == "" {
		t.Fatal("FINSVC_PROMETHEUS must name a Prometheus server binary")
	}
	load := 150 * time.Second
	if d, err := time.ParseDuration(os.Getenv("FINSVC_DASHBOARD_LOAD")); err == nil {
		load = d
	}

	env := apitest.New(t, apitest.WithConfig(func(c *config.Config) { c.WebhookAllowPrivate = true }))
	if err := env.App.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.App.Stop)
	svc := httptest.NewServer(env.App.Handler())
	defer svc.Close()

	promURL := startPrometheus(t, prom, svc.Listener.Addr().String())

	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Duration(5+time.Now().UnixNano()%40) * time.Millisecond)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer ok.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer failing.Close()

	acme := env.Tenant("acme")
	tok := acme.AdminToken()
	member := acme.Token(acme.User("member"), "clients:read")
	hook := func(event, target string) int64 {
		var wh models.WebhookWithSecret
		acme.Do("POST", "/api/1.0/webhooks", tok, map[string]any{"event": event, "target": target}).Status(t, http.StatusCreated).Decode(t, &wh)
		return int64(wh.Id)
	}
	good := hook(outbox.ActFetchData, ok.URL+"/hook")
	bad := hook(outbox.ActCreated, failing.URL+"/hook")
	_ = hook(outbox.ActDuplicated, ok.URL+"/dup")

	start := time.Now()
	var ids []int64
	for i := 0; time.Since(start) < load; i++ {
		// A load that changes shape half-way, so the lines move.
		burst := 6
		if time.Since(start) > load/2 {
			burst = 14
		}
		for j := 0; j < burst; j++ {
			acme.Do("GET", "/api/1.0/me", tok, nil)
			acme.Do("GET", "/api/1.0/clients?limit=20", tok, nil)
			if len(ids) > 0 {
				acme.Do("GET", "/api/1.0/clients/"+strconv.FormatInt(ids[(i+j)%len(ids)], 10), tok, nil)
			}
		}
		if i%3 == 0 {
			var c models.Client
			r := acme.Do("POST", "/api/1.0/clients", tok, map[string]any{"name": fmt.Sprintf("Client %d", i), "credit_limit": "1000.00"})
			if r.Code == http.StatusCreated {
				r.Decode(t, &c)
				ids = append(ids, int64(c.Id))
			}
		}
		acme.Do("GET", "/api/1.0/clients/999999", tok, nil)           // 404
		acme.Do("POST", "/api/1.0/clients", member, map[string]any{}) // 400: the body is checked first
		acme.Do("GET", "/api/1.0/clients", "not-a-token", nil)        // 401
		if i%4 == 0 {
			acme.Do("POST", "/api/1.0/webhooks/"+strconv.FormatInt(good, 10)+"/test", tok, nil)
			acme.Do("POST", "/api/1.0/webhooks/"+strconv.FormatInt(bad, 10)+"/test", tok, nil)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // the last scrape

	var dash shotDashboard
	if err := json.Unmarshal(repoFile(t, "deploy/grafana/finsvc.json"), &dash); err != nil {
		t.Fatal(err)
	}
	end := time.Now()
	from := end.Add(-load)
	drawn, queried := 0, 0
	for i := range dash.Panels {
		p := &dash.Panels[i]
		if len(p.Targets) > 0 {
			queried++
		}
		for _, tg := range p.Targets {
			expr := strings.NewReplacer(`$instance`, `.*`, `$__rate_interval`, `15s`).Replace(tg.Expr)
			series := queryRange(t, promURL, expr, from, end)
			for k := range series {
				series[k].Name = legend(tg.LegendFormat, series[k].Metric)
			}
			p.series = append(p.series, series...)
		}
		if len(p.series) > 0 {
			drawn++
		}
	}
	if drawn < queried*3/4 {
		t.Fatalf("only %d of %d panels with queries have data", drawn, queried)
	}
	page := render(t, dash, from, end)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	htmlPath := filepath.Join(t.TempDir(), "dashboard.html")
	if err := os.WriteFile(htmlPath, page, 0o644); err != nil {
		t.Fatal(err)
	}
	b := browsertest.New(t, browsertest.Options{})
	b.Do("open the dashboard", chromedp.EmulateViewport(1600, 1000), chromedp.Navigate("file://"+htmlPath))
	png, err := chromedp.Run(b.Ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(out, "grafana-dashboard.png")
	if err := os.WriteFile(dst, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d panels with queries have data; wrote %s (%d bytes)", drawn, queried, dst, len(png))
}

func startPrometheus(t *testing.T, bin, target string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: finsvc\n    static_configs:\n      - targets: [%q]\n", target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	u := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := http.Get(u + "/-/ready")
		if err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return u
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus did not become ready: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type shotDashboard struct {
	Title  string  `json:"title"`
	Panels []panel `json:"panels"`
}

type panel struct {
	Type    string                   `json:"type"`
	Title   string                   `json:"title"`
	GridPos struct{ X, Y, W, H int } `json:"gridPos"`
	Targets []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	series []series
}

type series struct {
	Metric map[string]string
	Name   string
	Points [][2]float64 // unix seconds, value
}

func queryRange(t *testing.T, base, expr string, from, to time.Time) []series {
	t.Helper()
	q := url.Values{"query": {expr}, "start": {strconv.FormatInt(from.Unix(), 10)},
		"end": {strconv.FormatInt(to.Unix(), 10)}, "step": {"2"}}
	r, err := http.Get(base + "/api/v1/query_range?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var res struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(r.Body).Decode(&res); err != nil {
		t.Fatal(err)
	}
	if res.Status != "success" {
		t.Fatalf("%s: %s", expr, res.Error)
	}
	var out []series
	for _, s := range res.Data.Result {
		var pts [][2]float64
		for _, v := range s.Values {
			ts, _ := v[0].(float64)
			str, _ := v[1].(string)
			f, err := strconv.ParseFloat(str, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				continue
			}
			pts = append(pts, [2]float64{ts, f})
		}
		if len(pts) > 0 {
			out = append(out, series{Metric: s.Metric, Points: pts})
		}
	}
	sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i].Metric) < fmt.Sprint(out[j].Metric) })
	return out
}

// legend fills {{label}} as Grafana does, or names the series by its labels.
func legend(format string, m map[string]string) string {
	if format != "" && format != "__auto" {
		s := format
		for k, v := range m {
			s = strings.ReplaceAll(s, "{{"+k+"}}", v)
			s = strings.ReplaceAll(s, "{{ "+k+" }}", v)
		}
		return s
	}
	var parts []string
	for k, v := range m {
		if k != "__name__" && k != "instance" && k != "job" {
			parts = append(parts, k+"="+v)
		}
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "value"
	}
	return strings.Join(parts, ", ")
}

var palette = []string{"#73bf69", "#f2cc0c", "#5794f2", "#ff780a", "#b877d9", "#f2495c", "#8ab8ff", "#fade2a", "#37872d", "#c4162a"}

func format(v float64, unit string) string {
	switch unit {
	case "percentunit":
		return strconv.FormatFloat(v*100, 'f', 2, 64) + "%"
	case "s":
		if v < 1 {
			return strconv.FormatFloat(v*1000, 'f', 1, 64) + " ms"
		}
		return strconv.FormatFloat(v, 'f', 1, 64) + " s"
	case "reqps":
		return strconv.FormatFloat(v, 'f', 1, 64) + " req/s"
	}
	if v != 0 && math.Abs(v) < 1 {
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func render(t *testing.T, d shotDashboard, from, to time.Time) []byte {
	t.Helper()
	const colW, rowH = 64.0, 32.0
	type cell struct {
		Title, Kind, Stat      string
		X, Y, W, H             float64
		Lines                  []template.HTML
		Legend                 []struct{ Name, Color string }
		Max                    string
		Empty                  bool
		PlotW, PlotH, LabelTop float64
	}
	var cells []cell
	height := 0.0
	for _, p := range d.Panels {
		c := cell{Title: p.Title, Kind: p.Type, X: float64(p.GridPos.X) * colW, Y: float64(p.GridPos.Y) * rowH,
			W: float64(p.GridPos.W)*colW - 8, H: float64(p.GridPos.H)*rowH - 8}
		height = math.Max(height, c.Y+c.H+8)
		c.PlotW, c.PlotH = c.W-24, c.H-70
		c.Empty = len(p.series) == 0
		switch p.Type {
		case "row":
		case "stat":
			if !c.Empty {
				pts := p.series[0].Points
				c.Stat = format(pts[len(pts)-1][1], p.FieldConfig.Defaults.Unit)
			} else {
				c.Stat = "no data"
			}
		default:
			maxV := 0.0
			for _, s := range p.series {
				for _, pt := range s.Points {
					maxV = math.Max(maxV, pt[1])
				}
			}
			if maxV == 0 {
				maxV = 1
			}
			c.Max = format(maxV, p.FieldConfig.Defaults.Unit)
			span := to.Sub(from).Seconds()
			for i, s := range p.series {
				color := palette[i%len(palette)]
				var b strings.Builder
				for _, pt := range s.Points {
					x := (pt[0] - float64(from.Unix())) / span * c.PlotW
					y := c.PlotH - pt[1]/maxV*c.PlotH
					fmt.Fprintf(&b, "%.1f,%.1f ", x, y)
				}
				c.Lines = append(c.Lines, template.HTML(fmt.Sprintf(`<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, color, b.String())))
				if i < 6 {
					c.Legend = append(c.Legend, struct{ Name, Color string }{s.Name, color})
				}
			}
		}
		cells = append(cells, c)
	}
	tpl := template.Must(template.New("d").Parse(`<!doctype html><html><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body{margin:0;background:#111217;color:#ccccdc;font:12px/1.3 Inter,Helvetica,Arial,sans-serif}
header{padding:10px 16px;font-size:16px;border-bottom:1px solid #2c2d33}
header small{color:#8e8e9e;margin-left:12px;font-size:12px}
.grid{position:relative;margin:8px}
.p{position:absolute;background:#181b1f;border:1px solid #2c2d33;border-radius:2px;overflow:hidden}
.p h3{margin:0;padding:6px 8px;font-size:12px;font-weight:500}
.row{background:none;border:none}.row h3{font-size:14px;padding:6px 0}
.stat{font-size:32px;font-weight:500;color:#73bf69;text-align:center;margin-top:8px}
.legend{padding:0 8px;white-space:nowrap;overflow:hidden}.legend span{margin-right:10px}
.legend i{display:inline-block;width:10px;height:3px;margin-right:4px;vertical-align:middle}
.max{position:absolute;right:8px;top:6px;color:#8e8e9e}
.empty{color:#8e8e9e;text-align:center;margin-top:30px}
svg{margin:0 12px;display:block}
</style></head><body>
<header>{{.Title}}<small>{{.Range}} · queries evaluated by Prometheus, one scrape a second</small></header>
<div class="grid" style="height:{{.Height}}px">
{{range .Cells}}<div class="p {{.Kind}}" style="left:{{.X}}px;top:{{.Y}}px;width:{{.W}}px;height:{{if eq .Kind "row"}}28{{else}}{{.H}}{{end}}px">
<h3>{{.Title}}</h3>
{{if eq .Kind "stat"}}<div class="stat">{{.Stat}}</div>
{{else if ne .Kind "row"}}{{if .Empty}}<div class="empty">no data</div>{{else}}<span class="max">max {{.Max}}</span>
<svg width="{{.PlotW}}" height="{{.PlotH}}"><line x1="0" y1="{{.PlotH}}" x2="{{.PlotW}}" y2="{{.PlotH}}" stroke="#2c2d33"/>{{range .Lines}}{{.}}{{end}}</svg>
<div class="legend">{{range .Legend}}<span><i style="background:{{.Color}}"></i>{{.Name}}</span>{{end}}</div>{{end}}{{end}}
</div>
{{end}}</div></body></html>`))
	var b strings.Builder
	err := tpl.Execute(&b, map[string]any{
		"Title": d.Title, "Cells": cells, "Height": height,
		"Range": from.UTC().Format("15:04:05") + "–" + to.UTC().Format("15:04:05 UTC, 2 Jan 2006"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return []byte(b.String())
}
