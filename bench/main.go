// Command bench is finsvc's load benchmark (`task bench`): it runs the real
// server (internal/httpapi with OAuth, metrics, rate limit; internal/server) and a
// bare echo baseline in this process over a fresh PostgreSQL database, and
// drives them from a closed-loop load generator over loopback:
//
//   - GET /api/1.0/clients/{id} and GET /api/1.0/acts/{uuid} (200 data
//     points) through the full chain, against bare echo handlers reading
//     the same rows with pgxpool directly and through the same GORM store
//     call (baseline.go), in alternating rounds of the same run;
//   - GET /api/1.0/clients?limit=100;
//   - a correlated bulk PUT of 50 fields (each on its own fresh fetch
//     request, so every PUT really applies).
//
// It prints requests/s, p50 and p99 per scenario and the full/baseline
// ratio. With -wrk, wrk drives the two comparisons from outside the
// process instead (compare.go). Counts and durations are bounded by flags;
// only loopback is used.
//
//	FINSVC_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable go run ./bench
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/finsvc/finsvc/internal/db"
)

type options struct {
	databaseURL string
	conc        int
	dur         time.Duration
	rounds      int
	clients     int
	bulk        int
	fields      int
	cpuProfile  string
	memProfile  string
	only        string

	noTokenCache bool
	soak         time.Duration

	scale    bool
	sqlite   bool
	scaleMax int
	scaleN   int
	// scaleProfile: with -cpuprofile, the scale run's request row profiled.
	scaleProfile string
	// claimRounds: alternating rounds per row of the scale run's claim table.
	claimRounds int

	wrk        bool
	wrkThreads int
	points     int

	replicas int
	events   int
	redisURL string
}

func main() {
	var o options
	flag.StringVar(&o.databaseURL, "database-url", os.Getenv("FINSVC_DATABASE_URL"), "PostgreSQL URL (a fresh database is created next to it and dropped); env FINSVC_DATABASE_URL")
	flag.IntVar(&o.conc, "c", 16, "concurrent connections")
	flag.DurationVar(&o.dur, "d", 5*time.Second, "duration of each measured phase")
	flag.IntVar(&o.rounds, "rounds", 3, "alternating full/baseline rounds of GET by id")
	flag.IntVar(&o.clients, "clients", 500, "clients to seed")
	flag.IntVar(&o.bulk, "bulk", 200, "bulk PUTs (each needs a prepared act and fetch request)")
	flag.IntVar(&o.fields, "fields", 50, "fields per bulk PUT")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the first full-chain GET by id round (or, with -only list / -only bulk, of that phase)")
	flag.StringVar(&o.memProfile, "memprofile", "", "write an allocation profile after the GET by id phases")
	flag.BoolVar(&o.noTokenCache, "no-token-cache", false, "serve without the bearer token cache (the 'before' figure)")
	flag.DurationVar(&o.soak, "soak", 0, "instead of the benchmark, run a mixed soak load this long (task soak: 5m)")
	flag.BoolVar(&o.scale, "scale", false, "instead of the benchmark, grow one tenant to 10k, 100k and 1M clients and measure list and read latency at each size")
	flag.BoolVar(&o.sqlite, "sqlite", false, "with -scale: run on a fresh SQLite file in the temp directory instead of PostgreSQL (as -database-url sqlite:<dir> does), without the outbox claim table")
	flag.IntVar(&o.scaleMax, "scale-max", 1_000_000, "with -scale: the largest size (clients) to grow to")
	flag.StringVar(&o.scaleProfile, "scale-profile", "", "with -scale and -cpuprofile: profile the request rows whose name starts with this (e.g. 'acts/{uuid}'); the last size's row is kept")
	flag.IntVar(&o.scaleN, "scale-n", 200, "with -scale: requests per measurement")
	flag.IntVar(&o.claimRounds, "claim-rounds", claimRounds, "with -scale: alternating rounds per row of the outbox claim table (more on a loaded machine)")
	flag.IntVar(&o.replicas, "replicas", 0, "instead of the benchmark, run this many `finsvc serve` processes (the built binary) on one database and Redis: throughput through 1…N, revocation delay, event delivery")
	flag.IntVar(&o.events, "replicas-events", 20000, "with -replicas: events to emit through the replicas (bounded to 100000)")
	flag.StringVar(&o.redisURL, "redis-url", envOr("FINSVC_REDIS_URL", "redis://127.0.0.1:6379/8"), "with -replicas: the Redis database the replicas share (emptied at the start: give the benchmark a database of its own; TestReplicas uses 9); env FINSVC_REDIS_URL")
	flag.StringVar(&o.only, "only", "", "comma-separated scenarios to run: get,act,list,bulk (default all; -wrk runs get and act; with -scale, claim runs only the outbox claim table, events only the events and audit log lists)")
	flag.BoolVar(&o.wrk, "wrk", false, "drive GET by id and GET act against their baselines with wrk (installed: task bench:wrk) instead of the in-process generator; -c, -d, -rounds apply")
	flag.IntVar(&o.wrkThreads, "wrk-threads", 2, "with -wrk: wrk's threads (-t)")
	flag.IntVar(&o.points, "points", 200, "data points of the act GET act reads")
	flag.Parse()
	if o.sqlite {
		if !o.scale {
			fmt.Fprintln(os.Stderr, "bench: -sqlite is for -scale only")
			os.Exit(2)
		}
		o.databaseURL = "sqlite:"
	}
	if o.databaseURL == "" {
		fmt.Fprintln(os.Stderr, "bench: set FINSVC_DATABASE_URL (or -database-url) to a PostgreSQL URL")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	runner := runBench
	if o.soak > 0 {
		if o.soak > 30*time.Minute {
			fmt.Fprintln(os.Stderr, "bench: -soak is bounded to 30m")
			os.Exit(2)
		}
		runner = runSoak
	}
	if o.wrk {
		runner = runWrk
	}
	if o.scale {
		runner = runScale
	}
	if o.replicas > 0 {
		if o.replicas > 8 || o.events > 100_000 {
			fmt.Fprintln(os.Stderr, "bench: -replicas is bounded to 8 processes and 100000 events")
			os.Exit(2)
		}
		runner = runReplicas
	}
	if err := runner(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func (o options) want(s string) bool {
	return o.only == "" || strings.Contains(","+o.only+",", ","+s+",")
}

func runBench(ctx context.Context, o options, out io.Writer) error {
	e, err := serveFresh(ctx, o.databaseURL, !o.noTokenCache, false)
	if err != nil {
		return err
	}
	defer e.Close()
	took, err := e.checkRevocation()
	if err != nil {
		return fmt.Errorf("revocation check: %w", err)
	}
	fmt.Fprintf(out, "revocation check: a revoked (previously cached) token was refused after %s\n", took.Round(10*time.Microsecond))
	fmt.Fprintf(out, "seeding %d clients…\n", o.clients)
	ids, err := e.seedClients(o.clients)
	if err != nil {
		return fmt.Errorf("seed clients: %w", err)
	}
	var targets []bulkTarget
	if o.want("bulk") {
		fmt.Fprintf(out, "preparing %d acts with a %d-field fetch request each…\n", o.bulk, o.fields)
		if targets, err = e.seedBulk(ctx, ids[0], o.bulk, o.fields); err != nil {
			return fmt.Errorf("seed bulk: %w", err)
		}
	}

	client := &http.Client{Transport: &http.Transport{
		MaxIdleConns: o.conc * 2, MaxIdleConnsPerHost: o.conc * 2, DisableCompression: true,
		IdleConnTimeout: time.Minute,
	}}
	list := scenario{Name: "GET /api/1.0/clients?limit=100", Want: 200, Next: func(i int64) (*http.Request, error) {
		page := 1 + i%int64(max(1, len(ids)/100))
		return e.request("GET", fmt.Sprintf("/api/1.0/clients?limit=100&page=%d", page), nil)
	}}
	bulk := scenario{Name: fmt.Sprintf("PUT /api/1.0/acts/{uuid}/data (correlated, %d fields)", o.fields), Want: 200, Max: int64(len(targets)),
		Next: func(i int64) (*http.Request, error) {
			t := targets[i]
			return e.request("PUT", "/api/1.0/acts/"+t.ActUUID+"/data", t.Body)
		}}

	var results []*result
	gen := inProcess(client, e, o.conc, o.dur)
	groups, err := e.groups(ctx, o, ids)
	if err != nil {
		return err
	}
	groupRows, tables, err := compareGroups(ctx, out, groups, o, gen, inProcess(client, e, o.conc, time.Second))
	if err != nil {
		return err
	}
	for i, g := range groups {
		rows := groupRows[i]
		for j := range g.Targets {
			var rs []*result
			for _, r := range rows {
				rs = append(rs, r.M[j].lat)
			}
			m := merge(rs)
			m.Name = g.Title + ", " + g.Targets[j].Name
			results = append(results, m)
		}
	}
	if len(groups) > 0 && o.memProfile != "" {
		f, err := os.Create(o.memProfile)
		if err != nil {
			return err
		}
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			return err
		}
		f.Close()
	}
	if o.want("list") {
		fmt.Fprintf(out, "list: %s…\n", o.dur)
		run(ctx, client, list, o.conc, time.Second)
		stop, err := profileIf(o, "list")
		if err != nil {
			return err
		}
		results = append(results, run(ctx, client, list, o.conc, o.dur))
		stop()
	}
	if o.want("bulk") {
		fmt.Fprintf(out, "bulk PUT: %d requests…\n", len(targets))
		stop, err := profileIf(o, "bulk")
		if err != nil {
			return err
		}
		results = append(results, run(ctx, client, bulk, o.conc, 10*time.Minute))
		stop()
	}

	fmt.Fprintln(out)
	fmt.Fprintln(out, machine(ctx, e.DB))
	fmt.Fprintf(out, "load: closed loop, %d connections, %s per phase, %d rounds of each comparison (baselines and full chain alternating); token cache %v; load average now %s\n\n", o.conc, o.dur, o.rounds, !o.noTokenCache, loadAverage())
	fmt.Fprint(out, table(results))
	for _, t := range tables {
		fmt.Fprintln(out)
		fmt.Fprint(out, t)
	}
	failed := false
	for _, r := range results {
		if r.Errors > 0 {
			failed = true
			fmt.Fprintf(out, "ERRORS in %s: %s; first: %s\n", r.Name, codes(r), r.FirstErr)
		}
	}
	if failed {
		return fmt.Errorf("requests failed")
	}
	return nil
}

// machine describes where the run happened.
func machine(ctx context.Context, d *db.DB) string {
	cpu := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	var pg string
	_ = d.WithContext(ctx).Raw("SHOW server_version").Scan(&pg).Error
	return fmt.Sprintf("machine: %s, %d CPUs (GOMAXPROCS %d), %s %s/%s, PostgreSQL %s on loopback; generator and servers share the machine",
		cpu, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH, pg)
}

// profileIf starts the CPU profile for a phase run alone (-only list or
// -only bulk with -cpuprofile); the returned func stops it.
func profileIf(o options, scenario string) (func(), error) {
	if o.cpuProfile == "" || o.only != scenario {
		return func() {}, nil
	}
	return startProfile(o.cpuProfile)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
