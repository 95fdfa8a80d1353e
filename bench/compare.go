package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// target is one endpoint measured under load: the full chain or one of
// its baselines (baseline.go). Requests cycle through Paths.
type target struct {
	Name  string
	Base  string // scheme://host:port
	Paths []string
	Full  bool // the full chain (profiled, sends the token)
}

// group is what is compared: the full chain first, then its baselines
// (the first of them is the one the ratio is taken against).
type group struct {
	Title   string
	Targets []target
}

// measurement is one round of one target, whatever the generator.
type measurement struct {
	RPS      float64
	P50, P99 time.Duration
	Requests int
	Errors   int
	Detail   string
	lat      *result // the in-process generator's samples (merged at the end)
}

// generator drives one target for one round.
type generator func(ctx context.Context, t target) (measurement, error)

// roundRow is one round of a group.
type roundRow struct {
	Load string
	M    []measurement
}

// compare runs rounds of g alternating its targets (baselines first, then
// the full chain, so that drift on a shared machine hits them alike),
// profiling the first full-chain round when prof is set.
func compare(ctx context.Context, out io.Writer, g group, rounds int, gen generator, prof string) ([]roundRow, error) {
	var rows []roundRow
	order := append(append([]int(nil), rangeFrom(1, len(g.Targets))...), 0)
	for r := range rounds {
		row := roundRow{Load: loadAverage(), M: make([]measurement, len(g.Targets))}
		fmt.Fprintf(out, "%s, round %d/%d (load average %s)…\n", g.Title, r+1, rounds, row.Load)
		for _, i := range order {
			t := g.Targets[i]
			var stop func()
			if t.Full && r == 0 && prof != "" {
				var err error
				if stop, err = startProfile(prof); err != nil {
					return nil, err
				}
			}
			m, err := gen(ctx, t)
			if stop != nil {
				stop()
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", t.Name, err)
			}
			if m.Errors > 0 {
				return nil, fmt.Errorf("%s: %d failed requests of %d: %s", t.Name, m.Errors, m.Requests, m.Detail)
			}
			row.M[i] = m
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func rangeFrom(a, b int) []int {
	var s []int
	for i := a; i < b; i++ {
		s = append(s, i)
	}
	return s
}

func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// loadAverage is /proc/loadavg's 1, 5 and 15 minute figures.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// compareGroups runs compare for each group after one warm-up run of every
// target (connections, caches, lazy init), profiling the first group when
// o.cpuProfile is set; it returns each group's rows and table.
func compareGroups(ctx context.Context, out io.Writer, groups []group, o options, gen, warm generator) ([][]roundRow, []string, error) {
	var all [][]roundRow
	var tables []string
	for i, g := range groups {
		for _, t := range g.Targets {
			if _, err := warm(ctx, t); err != nil {
				return nil, nil, err
			}
		}
		prof := ""
		if i == 0 {
			prof = o.cpuProfile
		}
		rows, err := compare(ctx, out, g, o.rounds, gen, prof)
		if err != nil {
			return nil, nil, err
		}
		all = append(all, rows)
		tables = append(tables, roundsTable(g, rows))
	}
	return all, tables, nil
}

// roundsTable renders a group's rounds: req/s and p99 of each target, and
// the full chain against the first baseline (req/s ratio, p99 multiple).
func roundsTable(g group, rows []roundRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n| round | load avg |", g.Title)
	for _, t := range g.Targets {
		fmt.Fprintf(&b, " %s req/s, p99 |", t.Name)
	}
	b.WriteString(" full/baseline req/s | full/baseline p99 |\n|---:|---|")
	for range g.Targets {
		b.WriteString("---:|")
	}
	b.WriteString("---:|---:|\n")
	var sum, lo, hi float64
	for i, r := range rows {
		fmt.Fprintf(&b, "| %d | %s |", i+1, r.Load)
		for _, m := range r.M {
			fmt.Fprintf(&b, " %.0f, %s |", m.RPS, ms(m.P99))
		}
		ratio := r.M[0].RPS / r.M[1].RPS
		fmt.Fprintf(&b, " **%.2f** | %.1f× |\n", ratio, float64(r.M[0].P99)/float64(max(r.M[1].P99, 1)))
		sum += ratio
		if i == 0 || ratio < lo {
			lo = ratio
		}
		if i == 0 || ratio > hi {
			hi = ratio
		}
	}
	if len(rows) > 0 {
		fmt.Fprintf(&b, "\nratio full/%s (req/s): mean %.2f, range %.2f–%.2f over %d rounds\n", g.Targets[1].Name, sum/float64(len(rows)), lo, hi, len(rows))
	}
	return b.String()
}

// inProcess is the closed-loop generator of load.go as a generator.
func inProcess(client *http.Client, e *env, conc int, dur time.Duration) generator {
	return func(ctx context.Context, t target) (measurement, error) {
		sc := scenario{Name: t.Name, Want: 200, Next: func(i int64) (*http.Request, error) {
			req, err := http.NewRequest("GET", t.Base+t.Paths[i%int64(len(t.Paths))], nil)
			if err != nil {
				return nil, err
			}
			req.Host = e.host()
			if t.Full {
				req.Header.Set("Authorization", "Bearer "+e.Token)
				req.Header.Set("Accept", "application/json")
			}
			return req, nil
		}}
		r := run(ctx, client, sc, conc, dur)
		return measurement{RPS: r.RPS(), P50: Percentile(r.Lat, 50), P99: Percentile(r.Lat, 99), Requests: r.N,
			Errors: r.Errors, Detail: codes(r) + " " + r.FirstErr, lat: r}, nil
	}
}

// wrkScript is the Lua script wrk runs: every thread cycles through the
// paths with the tenant's Host and the token, and done() prints one line
// the benchmark parses (latencies in microseconds).
const wrkScript = `local paths = {%s}
local i = 0
wrk.headers["Host"] = %q
wrk.headers["Authorization"] = %q
wrk.headers["Accept"] = "application/json"
request = function()
  i = i + 1
  return wrk.format("GET", paths[(i %% #paths) + 1])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRKRESULT %%d %%d %%d %%d %%d %%d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), e.status, e.connect + e.read + e.write + e.timeout))
end
`

// wrkGenerator runs /usr/bin/wrk (Debian's package: task bench:wrk
// installs it) with threads threads and conc connections for dur per
// target. Every target gets the same headers; the baselines ignore the
// token.
func wrkGenerator(e *env, threads, conc int, dur time.Duration, dir string) (generator, error) {
	bin, err := exec.LookPath("wrk")
	if err != nil {
		return nil, errors.New("wrk is not installed (task bench:wrk installs it; or apt-get install wrk)")
	}
	return func(ctx context.Context, t target) (measurement, error) {
		quoted := make([]string, len(t.Paths))
		for i, p := range t.Paths {
			quoted[i] = strconv.Quote(p)
		}
		script := filepath.Join(dir, "bench.lua")
		lua := fmt.Sprintf(wrkScript, strings.Join(quoted, ", "), e.host(), "Bearer "+e.Token)
		if err := os.WriteFile(script, []byte(lua), 0o600); err != nil {
			return measurement{}, err
		}
		secs := max(1, int(dur.Seconds()))
		cmd := exec.CommandContext(ctx, bin, "-t", strconv.Itoa(threads), "-c", strconv.Itoa(conc),
			"-d", strconv.Itoa(secs)+"s", "--timeout", "10s", "-s", script, t.Base+t.Paths[0])
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return measurement{}, fmt.Errorf("wrk: %w: %s", err, stderr.String())
		}
		return parseWrk(stdout.String())
	}, nil
}

// parseWrk reads the script's WRKRESULT line.
func parseWrk(s string) (measurement, error) {
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) != 7 || f[0] != "WRKRESULT" {
			continue
		}
		var n [6]int64
		for i := range n {
			v, err := strconv.ParseInt(f[i+1], 10, 64)
			if err != nil {
				return measurement{}, fmt.Errorf("wrk output %q: %w", line, err)
			}
			n[i] = v
		}
		m := measurement{Requests: int(n[0]), P50: time.Duration(n[2]) * time.Microsecond, P99: time.Duration(n[3]) * time.Microsecond,
			Errors: int(n[4] + n[5])}
		if n[1] > 0 {
			m.RPS = float64(n[0]) / (float64(n[1]) / 1e6)
		}
		if m.Errors > 0 {
			m.Detail = fmt.Sprintf("%d non-2xx, %d socket errors", n[4], n[5])
		}
		return m, nil
	}
	return measurement{}, fmt.Errorf("no WRKRESULT line in wrk's output: %.500s", s)
}

// groups builds the comparisons -only asks for: GET by id over the seeded
// clients, and GET of one act with o.points data points (seeded here, each
// with a value and a fetch state, as BenchmarkGetAct200's fixture).
func (e *env) groups(ctx context.Context, o options, ids []int64) ([]group, error) {
	var gs []group
	paths := func(format string, ids []int64) []string {
		ps := make([]string, len(ids))
		for i, id := range ids {
			ps[i] = fmt.Sprintf(format, id)
		}
		return ps
	}
	actUUID := ""
	if o.want("act") {
		ts, err := e.seedBulk(ctx, ids[0], 1, o.points)
		if err != nil {
			return nil, fmt.Errorf("seed act: %w", err)
		}
		if err := e.api("PUT", "/api/1.0/acts/"+ts[0].ActUUID+"/data", ts[0].Body, nil, http.StatusOK); err != nil {
			return nil, fmt.Errorf("fill act: %w", err)
		}
		actUUID = ts[0].ActUUID
	}
	if err := e.checkBaselines(ids[0], actUUID, o.points); err != nil {
		return nil, fmt.Errorf("baseline check: %w", err)
	}
	if o.want("get") {
		gs = append(gs, group{Title: "GET /api/1.0/clients/{id}", Targets: []target{
			{Name: "full chain", Base: e.FullURL, Paths: paths("/api/1.0/clients/%d", ids), Full: true},
			{Name: "pgx baseline", Base: e.BareURL, Paths: paths("/pgx/clients/%d", ids)},
			{Name: "pgx exec mode (pooled floor)", Base: e.BareURL, Paths: paths("/pgx-exec/clients/%d", ids)},
			{Name: "GORM baseline", Base: e.BareURL, Paths: paths("/bare/clients/%d", ids)},
		}})
	}
	if actUUID != "" {
		gs = append(gs, group{Title: fmt.Sprintf("GET /api/1.0/acts/{uuid} (%d data points)", o.points), Targets: []target{
			{Name: "full chain", Base: e.FullURL, Paths: []string{"/api/1.0/acts/" + actUUID}, Full: true},
			{Name: "pgx baseline", Base: e.BareURL, Paths: []string{"/pgx/acts/" + actUUID}},
			{Name: "pgx exec mode (pooled floor)", Base: e.BareURL, Paths: []string{"/pgx-exec/acts/" + actUUID}},
			{Name: "GORM baseline", Base: e.BareURL, Paths: []string{"/bare/acts/" + actUUID}},
		}})
	}
	return gs, nil
}

// runWrk is -wrk: the comparisons of runBench driven from outside the
// process by wrk (Lua script: Host, token, the paths), alternating rounds.
func runWrk(ctx context.Context, o options, out io.Writer) error {
	e, err := serveFresh(ctx, o.databaseURL, !o.noTokenCache, false)
	if err != nil {
		return err
	}
	defer e.Close()
	fmt.Fprintf(out, "seeding %d clients…\n", o.clients)
	ids, err := e.seedClients(o.clients)
	if err != nil {
		return fmt.Errorf("seed clients: %w", err)
	}
	dir, err := os.MkdirTemp("", "finsvc-wrk-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	gen, err := wrkGenerator(e, o.wrkThreads, o.conc, o.dur, dir)
	if err != nil {
		return err
	}
	warm, err := wrkGenerator(e, o.wrkThreads, o.conc, time.Second, dir)
	if err != nil {
		return err
	}
	groups, err := e.groups(ctx, o, ids)
	if err != nil {
		return err
	}
	_, tables, err := compareGroups(ctx, out, groups, o, gen, warm)
	if err != nil {
		return err
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, machine(ctx, e.DB))
	fmt.Fprintf(out, "load: wrk -t%d -c%d -d%s per round, %d rounds (baselines, then the full chain); token cache %v; load average now %s\n",
		o.wrkThreads, o.conc, o.dur, o.rounds, !o.noTokenCache, loadAverage())
	for _, t := range tables {
		fmt.Fprintln(out)
		fmt.Fprint(out, t)
	}
	return nil
}
