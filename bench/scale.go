package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/finsvc/finsvc/internal/acts"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/janitor"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// runScale is `go run ./bench -scale`: one big tenant grown through 10k,
// 100k and 1M clients (and a fifth as many acts, 50 data points each: 10M
// at 1M clients), beside a small tenant, measuring list and read latency
// at each size through the full server, a correlated bulk PUT of 200
// fields and a fetch request through the delivery worker to a loopback
// receiver. Rows are written with INSERT … SELECT over generate_series (a
// recursive CTE on SQLite; the triggers count them as they would a COPY).
// On PostgreSQL, in two databases of their own, the outbox claim with as
// many delivered deliveries as the tenant has clients, against an empty
// history (scale_claim.go). With a sqlite: database URL (-sqlite) the same
// tenant grows in a fresh SQLite file, without the claim table. Bounded:
// -scale-max caps the largest size; each measurement is -scale-n requests.
// -only events grows and reads the events and the audit log instead
// (scale_events.go).
func runScale(ctx context.Context, o options, out io.Writer) error {
	if o.only == "events" {
		return runScaleEvents(ctx, o, out)
	}
	if o.only == "claim" {
		if strings.HasPrefix(o.databaseURL, "sqlite:") {
			return errors.New("the outbox claim table is PostgreSQL's (FOR UPDATE SKIP LOCKED beside a long history)")
		}
		return runScaleClaim(ctx, o, out)
	}
	// The delivery worker runs in the server, as `finsvc serve` runs it:
	// fetch requests reach the loopback receiver through it.
	e, err := serveFresh(ctx, o.databaseURL, true, true)
	if err != nil {
		return err
	}
	defer e.Close()
	d := e.DB
	sqlite := d.Dialect == db.SQLite
	uuidText := "uuid::text"
	if sqlite {
		uuidText = "uuid"
	}
	recv, err := e.startReceiver()
	if err != nil {
		return err
	}
	defer recv.Close()
	var fetchTmpl int64 // created once the seeded template ids are taken
	// The outbox claim table compares two PostgreSQL databases of their
	// own: concurrent workers claiming with FOR UPDATE SKIP LOCKED beside a
	// long delivered history. SQLite has one writer at a time and its claim
	// runs under the write lock, so it is skipped there (stated in the
	// output).
	var empty, full *claimDB
	if !sqlite {
		var closeClaims func()
		if empty, full, closeClaims, err = newClaimPair(ctx, o.databaseURL); err != nil {
			return err
		}
		defer closeClaims()
	}
	var claims, seeded strings.Builder
	claims.WriteString(claimTableHead)
	small, err := tenant.NewStore(d).Create(ctx, "small", "Small")
	if err != nil {
		return err
	}
	big := e.Tenant.ID
	if err := seedTemplate(d, big, small.ID); err != nil {
		return err
	}
	if err := d.Exec(`INSERT INTO clients (tenant_id, id, company_name, org_number, country, credit_limit)
		SELECT ?, g, 'Small ' || g, '559' || g, 'SE', 100 FROM `+series(sqlite, "1", "500"), small.ID).Error; err != nil {
		return err
	}
	se := &env{DB: d, Tenant: small, FullURL: e.FullURL, hostName: "small.localhost"}
	if err := se.login(ctx); err != nil {
		return fmt.Errorf("small tenant oauth flow: %w", err)
	}
	smallToken := se.Token

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8, DisableCompression: true}}
	fmt.Fprintf(out, "| clients | acts | data points | request | p50 | p99 |\n|---:|---:|---:|---|---:|---:|\n")
	have := 0
	for _, size := range []int{10_000, 100_000, 1_000_000} {
		if size > o.scaleMax {
			break
		}
		t0 := time.Now()
		if err := seedScale(d, big, have, size); err != nil {
			return fmt.Errorf("seed %d: %w", size, err)
		}
		have = size
		line := fmt.Sprintf("seeded %d clients, %d acts, %d data points (%s) in %s\n", size, size/5, size/5*scalePoints, d.Dialect, time.Since(t0).Round(time.Second))
		fmt.Fprint(os.Stderr, line)
		seeded.WriteString("- " + line)
		// New acts of the big tenant, untimed: one per bulk PUT (each
		// applies a fresh fetch request's 200 results) and one per fetch
		// request.
		t0 = time.Now()
		if fetchTmpl == 0 {
			if fetchTmpl, err = e.externalTemplate("Fetch template", 10); err != nil {
				return err
			}
		}
		bulk, err := e.seedBulk(ctx, 1, o.scaleN, 200)
		if err != nil {
			return fmt.Errorf("bulk PUT targets: %w", err)
		}
		fetchActs, err := e.newActs(fetchTmpl, o.scaleN)
		if err != nil {
			return fmt.Errorf("fetch request acts: %w", err)
		}
		// The seeding's own act.fetch_data deliveries reach the receiver
		// before anything is timed.
		if err := waitOutboxIdle(ctx, d); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "prepared %d bulk PUTs and %d fetch requests in %s\n", len(bulk), len(fetchActs), time.Since(t0).Round(time.Second))
		acts, points := size/5, size/5*scalePoints
		var actUUID string
		if err := d.Raw(`SELECT `+uuidText+` FROM acts WHERE tenant_id = ? ORDER BY created_at DESC LIMIT 1 OFFSET ?`, big, acts/2).Scan(&actUUID).Error; err != nil {
			return err
		}
		last := size / 25
		reqs := []struct{ name, path, token string }{
			{"clients page 1", "/api/1.0/clients?page=1&limit=25", e.Token},
			{fmt.Sprintf("clients page %d (last)", last), fmt.Sprintf("/api/1.0/clients?page=%d&limit=25", last), e.Token},
			{"clients/{id}", fmt.Sprintf("/api/1.0/clients/%d", size/2), e.Token},
			{"acts?status=final page 1", "/api/1.0/acts?status=final&limit=25", e.Token},
			{"acts?status=final deep (row 90%)", fmt.Sprintf("/api/1.0/acts?status=final&limit=25&page=%d", max(1, acts/4/25*9/10)), e.Token},
			{"acts?client_id=… (a client with acts)", fmt.Sprintf("/api/1.0/acts?client_id=%d", 1+7919%size), e.Token},
			{fmt.Sprintf("acts/{uuid} (%d data points)", scalePoints), "/api/1.0/acts/" + actUUID, e.Token},
			// The list filters and incremental sync: a stored total
			// (country, org_number, template_id) or one counted over the
			// filter's index, bounded by its matches (q: 1,111 names at any
			// size from 10k; updated_since: the last 1,000 seeded changes
			// plus the API's own).
			{"clients?country=NO page 1", "/api/1.0/clients?country=NO&limit=25", e.Token},
			{"clients?country=NO deep (row 90%)", fmt.Sprintf("/api/1.0/clients?country=NO&limit=25&page=%d", max(1, size/4/25*9/10)), e.Token},
			{"clients?org_number=…", fmt.Sprintf("/api/1.0/clients?org_number=556%d", size/2), e.Token},
			{"clients?q=client 1234", "/api/1.0/clients?q=client%201234&limit=25", e.Token},
			{"clients?updated_since=(last 1,000) limit 100", "/api/1.0/clients?limit=100&updated_since=" + sinceSeeded(size-1000), e.Token},
			{"acts?template_id=1 page 1", "/api/1.0/acts?template_id=1&limit=25", e.Token},
			{"acts?updated_since=(last 1,000) limit 100", "/api/1.0/acts?limit=100&updated_since=" + sinceSeeded(acts-1000), e.Token},
			{"small tenant: clients page 1", "/api/1.0/clients?page=1&limit=25", smallToken},
		}
		for i, r := range reqs {
			host := e.host()
			if r.token == smallToken {
				host = "small.localhost"
			}
			var stopNoise func()
			if i == len(reqs)-1 { // the small tenant, while the big one is read
				stopNoise = e.noise(ctx, client, fmt.Sprintf("/api/1.0/clients?page=%d&limit=25", last))
			}
			stopProfile, err := scaleProfile(o, r.name)
			if err != nil {
				return err
			}
			lat, err := measure(ctx, client, e.FullURL+r.path, host, r.token, o.scaleN)
			stopProfile()
			if stopNoise != nil {
				stopNoise()
			}
			if err != nil {
				return fmt.Errorf("%s: %w", r.name, err)
			}
			fmt.Fprintf(out, "| %d | %d | %d | %s | %s | %s |\n", size, acts, points, r.name, ms(Percentile(lat, 50)), ms(Percentile(lat, 99)))
		}
		lat, err := measureEach(ctx, client, len(bulk), func(i int) (*http.Request, error) {
			return e.request("PUT", "/api/1.0/acts/"+bulk[i].ActUUID+"/data", bulk[i].Body)
		}, http.StatusOK)
		if err != nil {
			return fmt.Errorf("bulk PUT: %w", err)
		}
		fmt.Fprintf(out, "| %d | %d | %d | %s | %s | %s |\n", size, acts, points, "PUT acts/{uuid}/data (correlated, 200 fields)", ms(Percentile(lat, 50)), ms(Percentile(lat, 99)))
		if lat, err = e.measureFetch(ctx, recv, fetchActs); err != nil {
			return fmt.Errorf("fetch request through delivery: %w", err)
		}
		fmt.Fprintf(out, "| %d | %d | %d | %s | %s | %s |\n", size, acts, points, "fetch request → act.fetch_data at the loopback receiver", ms(Percentile(lat, 50)), ms(Percentile(lat, 99)))
		// What the lists cost before: COUNT(*) and OFFSET over the rows.
		for _, q := range []struct{ name, sql string }{
			{"(before) COUNT(*) of clients", fmt.Sprintf("SELECT count(*) FROM clients WHERE tenant_id = %d", big)},
			{"(before) clients OFFSET to the last page", fmt.Sprintf("SELECT * FROM clients WHERE tenant_id = %d ORDER BY id LIMIT 25 OFFSET %d", big, (last-1)*25)},
		} {
			lat := make([]time.Duration, 0, 20)
			for range 20 {
				t := time.Now()
				if err := d.Exec(q.sql).Error; err != nil {
					return err
				}
				lat = append(lat, time.Since(t))
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			fmt.Fprintf(out, "| %d | %d | %d | %s (SQL only) | %s | %s |\n", size, acts, points, q.name, ms(Percentile(lat, 50)), ms(Percentile(lat, 99)))
		}
		if sqlite {
			continue
		}
		t0 = time.Now()
		if err := claimBench(ctx, empty, full, size, o.claimRounds, &claims); err != nil {
			return fmt.Errorf("outbox claim: %w", err)
		}
		fmt.Fprintf(os.Stderr, "outbox claim with %d delivered: %s\n", size, time.Since(t0).Round(time.Second))
	}
	fmt.Fprint(out, "\nSeeding (INSERT … SELECT, counted and blocked by the triggers, then ANALYZE on PostgreSQL, the statistics janitor's PRAGMA optimize on SQLite):\n\n"+seeded.String())
	if sqlite {
		fmt.Fprint(out, "\nOutbox claim: skipped on SQLite (the table compares concurrent PostgreSQL workers claiming with FOR UPDATE SKIP LOCKED beside a long history; SQLite claims under its single write lock).\n")
		return nil
	}
	fmt.Fprint(out, "\n"+claimIntro(o.claimRounds))
	fmt.Fprint(out, claims.String())
	return nil
}

// scalePoints is the number of data points per seeded act: 200,000 acts
// at 1M clients hold 10,000,000 data points, the size the act tables
// are planned for.
const scalePoints = 50

// actUUID is act g's uuid in SQL: deterministic, and a valid version-4
// UUID (the API's path parameters are validated as such). PostgreSQL
// spreads them over the key space as random ones would be (md5); SQLite has
// no md5, and takes g in hex.
const (
	actUUID       = `(substr(md5('act' || g), 1, 12) || '4' || substr(md5('act' || g), 14, 3) || '8' || substr(md5('act' || g), 18, 15))::uuid`
	actUUIDSQLite = `printf('%08x-0000-4000-8000-%012x', g, g)`
)

// sinceSeeded is updated_since for the seeded rows after the n-th (their
// updated_at is one second apart from 2026-01-01).
func sinceSeeded(n int) string {
	return time.Date(2026, 1, 1, 0, 0, max(0, n), 0, time.UTC).Format(time.RFC3339)
}

// seededAt is the created_at and updated_at of seeded row g, in SQL: one
// second apart from 2026-01-01. On SQLite it is the text the driver writes
// for a whole-second UTC time.Time, so that it compares with the API's
// parameters (updated_since) as the API's own rows do.
func seededAt(sqlite bool) string {
	if sqlite {
		return `strftime('%Y-%m-%d %H:%M:%S+00:00', '2026-01-01', '+' || g || ' seconds')`
	}
	return `timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second'`
}

// series is a FROM item of the integers lo…hi as column g: generate_series
// on PostgreSQL, a recursive CTE on SQLite (its driver has no
// generate_series). lo and hi are SQL expressions.
func series(sqlite bool, lo, hi string) string {
	if sqlite {
		return `(WITH RECURSIVE s(g) AS (SELECT ` + lo + ` UNION ALL SELECT g + 1 FROM s WHERE g < ` + hi + `) SELECT g FROM s) s`
	}
	return `generate_series(` + lo + `, ` + hi + `) g`
}

// scaleProfile starts the CPU profile (-cpuprofile) for a request row of
// the scale run whose name starts with -scale-profile; the returned func
// stops it. Each size's row overwrites the file: the last size is kept.
func scaleProfile(o options, name string) (func(), error) {
	if o.cpuProfile == "" || o.scaleProfile == "" || !strings.HasPrefix(name, o.scaleProfile) {
		return func() {}, nil
	}
	return startProfile(o.cpuProfile)
}

// seedTemplate writes template 1 of the big tenant, whose scalePoints
// manual fields the seeded acts' data points are, and an empty template 1
// of the small one.
func seedTemplate(d *db.DB, big, small int64) error {
	if err := d.Exec(`INSERT INTO templates (tenant_id, id, family_id, version, name) VALUES (?, 1, 1, 1, 'T'), (?, 1, 1, 1, 'T')`, big, small).Error; err != nil {
		return err
	}
	if err := d.Exec(`INSERT INTO template_fields (tenant_id, id, template_id, position, key, name, type, source)
		SELECT ?, g, 1, g, 'f' || g, 'Field ' || g, 'text', 'manual' FROM `+series(d.Dialect == db.SQLite, "1", fmt.Sprint(scalePoints)), big).Error; err != nil {
		return fmt.Errorf("template fields: %w", err)
	}
	return nil
}

// seedScale grows the big tenant from have to want clients, a fifth as
// many acts (a quarter of them final, numbered in creation order) and
// scalePoints data points per act, then refreshes the planner's
// statistics. The rows are written with INSERT … SELECT over a series
// (generate_series on PostgreSQL, a recursive CTE on SQLite); the triggers
// count and block them as they would a COPY's. On SQLite the acts and their
// data points go in batches, so that no transaction's WAL holds gigabytes.
func seedScale(d *db.DB, tid int64, have, want int) error {
	sqlite := d.Dialect == db.SQLite
	// Acts the API created since the last growth (the bulk PUT and fetch
	// request targets) took creation numbers and data point ids: the
	// seeded ones go after them.
	next := func(seq string) (int64, error) {
		var n int64
		err := d.Raw(`SELECT COALESCE(max(next_id), 0) FROM id_sequences WHERE tenant_id = ? AND name = ?`, tid, seq).Scan(&n).Error
		return n, err
	}
	nextSeq, err := next(acts.SeqName)
	if err != nil {
		return err
	}
	nextDP, err := next("data_points")
	if err != nil {
		return err
	}
	off := max(0, nextSeq-int64(have/5)-1)
	dpOff := max(0, nextDP-int64(have/5*scalePoints)-1)
	// Four countries and one change a second (updated_at) give the filters
	// and updated_since something to select.
	country := `(ARRAY['SE','NO','DK','FI'])[1 + g % 4]`
	cast, uuid := "::bigint", actUUID
	if sqlite {
		country = `CASE g % 4 WHEN 0 THEN 'SE' WHEN 1 THEN 'NO' WHEN 2 THEN 'DK' ELSE 'FI' END`
		cast, uuid = "", actUUIDSQLite
	}
	exec := func(sql string, args ...any) error { return d.Exec(sql, args...).Error }
	if err := exec(`INSERT INTO clients (tenant_id, id, company_name, org_number, country, credit_limit, updated_at)
		 SELECT ?, g, 'Client ' || g, '556' || g, `+country+`, 1000, `+seededAt(sqlite)+`
		 FROM `+series(sqlite, "?"+cast+" + 1", "?"+cast), tid, have, want); err != nil {
		return fmt.Errorf("clients: %w", err)
	}
	// Acts g of (from, to], batch by batch.
	batch := want / 5
	if sqlite {
		batch = 20_000 // a million data points a transaction
	}
	order := " ORDER BY a.u, p.f"
	if sqlite {
		order = ""
	}
	// PostgreSQL checks the data points' foreign key to acts with one
	// SELECT … FOR KEY SHARE of the act per row, queued to the end of the
	// statement: at 1M clients, 10M locks of 200k act rows took longer than
	// the rows themselves (over 12 minutes of a seed). The seeded data points
	// reference the acts seeded just before by construction (TestSeedScale
	// checks them), and data_points has no trigger of its own, so a
	// superuser's seed skips those checks for that statement
	// (session_replication_role = replica, local to its transaction); a
	// COPY import would pay them.
	skipFK := false
	if !sqlite {
		if err := d.Raw(`SELECT rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&skipFK).Error; err != nil {
			return err
		}
	}
	insertPoints := func(sql string, args ...any) error {
		if !skipFK {
			return exec(sql, args...)
		}
		return d.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec(`SET LOCAL session_replication_role = replica`).Error; err != nil {
				return err
			}
			return tx.Exec(sql, args...).Error
		})
	}
	for from := have / 5; from < want/5; from += batch {
		to := min(from+batch, want/5)
		if err := exec(`INSERT INTO acts (tenant_id, uuid, client_id, template_id, title, status, created_at, updated_at, seq)
			 SELECT ?, `+uuid+`, 1 + (g * 7919) % ?, 1, 'Act ' || g,
			        CASE WHEN g % 4 = 0 THEN 'final' ELSE 'draft' END, `+seededAt(sqlite)+`, `+seededAt(sqlite)+`, g + ?
			 FROM `+series(sqlite, "?"+cast+" + 1", "?"+cast), tid, want, off, from, to); err != nil {
			return fmt.Errorf("acts: %w", err)
		}
		// The data points in the order of their act's uuid, numbered in
		// that order: the primary key and both (act_uuid, …) indexes are
		// then filled in key order, each leaf page once, instead of at
		// random (PostgreSQL's md5 uuids are; the batch took 10 minutes
		// at 1M clients so). The uuid is computed once per act. CROSS
		// JOIN keeps SQLite's loop order, and its uuids follow g already.
		if err := insertPoints(`INSERT INTO data_points (tenant_id, id, act_uuid, template_field_id, position, key, name, type, source, value)
			 SELECT ?, (a.r - 1) * `+fmt.Sprint(scalePoints)+` + p.f + ?, a.u, p.f, p.f, 'f' || p.f, 'Field ' || p.f, 'text', 'manual', 'v' || a.g
			 FROM (SELECT g, u, row_number() OVER (ORDER BY u) AS r FROM (SELECT g, `+uuid+` AS u FROM `+series(sqlite, "?"+cast+" + 1", "?"+cast)+`) x) a
			 CROSS JOIN (SELECT g AS f FROM `+series(sqlite, "1", fmt.Sprint(scalePoints))+`) p`+order,
			tid, dpOff+int64(from*scalePoints), from, to); err != nil {
			return fmt.Errorf("data points: %w", err)
		}
	}
	// The acts' creation numbers continue after the seeded ones.
	if err := exec(`INSERT INTO id_sequences (tenant_id, name, next_id) VALUES (?, '`+acts.SeqName+`', ?`+cast+` + 1 + ?`+cast+`)
		 ON CONFLICT (tenant_id, name) DO UPDATE SET next_id = excluded.next_id`, tid, want/5, off); err != nil {
		return err
	}
	// The API allocates ids per tenant (db.NextIDs): start past the rows
	// written here. (SQLite needs the WHERE to read ON CONFLICT as the
	// upsert's; its two-argument max is PostgreSQL's GREATEST.)
	greatest := "GREATEST"
	if sqlite {
		greatest = "max"
	}
	for _, seq := range []string{"clients", "templates", "template_fields", "data_points"} {
		if err := exec(`INSERT INTO id_sequences (tenant_id, name, next_id)
			SELECT ?, '`+seq+`', COALESCE(max(id), 0) + 1 FROM `+seq+` WHERE tenant_id = ?
			ON CONFLICT (tenant_id, name) DO UPDATE SET next_id = `+greatest+`(id_sequences.next_id, excluded.next_id)`, tid, tid); err != nil {
			return fmt.Errorf("id sequence %s: %w", seq, err)
		}
	}
	// The planner's statistics, as autovacuum would have them after such a
	// growth. Not ANALYZE on SQLite: there the service keeps them itself,
	// and the benchmark plans with what it keeps, what the statistics
	// janitor's next run (PRAGMA optimize, a sampled ANALYZE of the tables
	// that grew tenfold or were never analyzed) leaves, timed here: it holds
	// the write lock while it runs. Without any statistics SQLite planned
	// the acts lists and the bulk PUT's reads by scans that grow with the
	// tenant (acts by status 343 ms at 1M clients, the bulk PUT 475 ms at
	// 100k; BENCHMARKS.md, "SQLite").
	if sqlite {
		t0 := time.Now()
		if err := janitor.NewStatistics(d, nil).RunOnce(context.Background()); err != nil {
			return fmt.Errorf("statistics: %w", err)
		}
		fmt.Fprintf(os.Stderr, "statistics janitor run (PRAGMA optimize) at %d clients: %s\n", want, time.Since(t0).Round(time.Millisecond))
		return nil
	}
	return exec("ANALYZE")
}

// measure sends n sequential GETs and returns their sorted latencies.
func measure(ctx context.Context, c *http.Client, url, host, token string, n int) ([]time.Duration, error) {
	return measureEach(ctx, c, n, func(int) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
		if err != nil {
			return nil, err
		}
		req.Host = host
		req.Header.Set("Authorization", "Bearer "+token)
		return req, nil
	}, http.StatusOK)
}

// measureEach sends the n requests next(0…n-1) one after the other and
// returns their sorted latencies; each must answer want.
func measureEach(ctx context.Context, c *http.Client, n int, next func(int) (*http.Request, error), want int) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	for i := range n {
		req, err := next(i)
		if err != nil {
			return nil, err
		}
		req = req.WithContext(ctx)
		t := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			return nil, fmt.Errorf("%s %s: %d, want %d: %.300s", req.Method, req.URL.Path, resp.StatusCode, want, b)
		}
		lat = append(lat, time.Since(t))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, nil
}

// receiver is the loopback target of the big tenant's act.fetch_data
// registration: it answers 200 at once and reports when each fetch request
// arrived.
type receiver struct {
	srv     *http.Server
	arrived chan arrival
}

type arrival struct {
	requestID string
	at        time.Time
}

// startReceiver serves the receiver on a loopback port and registers it
// (through the API, so its signing secret is sealed as the worker expects).
func (e *env) startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{arrived: make(chan arrival, 4096)}
	r.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		at := time.Now()
		var env struct {
			Data struct {
				RequestID string `json:"request_id"`
			} `json:"data"`
		}
		_ = json.NewDecoder(req.Body).Decode(&env)
		select {
		case r.arrived <- arrival{env.Data.RequestID, at}:
		default: // nobody waits for it (the seeding's deliveries)
		}
		w.WriteHeader(http.StatusOK)
	})}
	go func() { _ = r.srv.Serve(ln) }()
	if err := e.api("POST", "/api/1.0/webhooks", map[string]any{"event": "act.fetch_data", "target": "http://" + ln.Addr().String() + "/hook"}, nil, http.StatusCreated); err != nil {
		r.Close()
		return nil, fmt.Errorf("register the receiver: %w", err)
	}
	return r, nil
}

func (r *receiver) Close() { _ = r.srv.Close() }

// wait returns when the fetch request id arrived, dropping earlier
// arrivals of other requests.
func (r *receiver) wait(ctx context.Context, id string) (time.Time, error) {
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case a := <-r.arrived:
			if a.requestID == id {
				return a.at, nil
			}
		case <-timeout.C:
			return time.Time{}, fmt.Errorf("fetch request %s did not reach the receiver within 30s", id)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

// fetchAct is an act and the ids of its data points.
type fetchAct struct {
	UUID string
	IDs  []int64
}

// externalTemplate creates a template of n external fields.
func (e *env) externalTemplate(name string, n int) (int64, error) {
	var fields []map[string]any
	for i := range n {
		fields = append(fields, map[string]any{"key": fmt.Sprintf("x%02d", i), "name": fmt.Sprintf("External %d", i), "type": "text", "source": "external_data"})
	}
	var tmpl struct {
		ID int64 `json:"id"`
	}
	err := e.api("POST", "/api/1.0/templates", map[string]any{"name": name, "fields": fields}, &tmpl, http.StatusCreated)
	return tmpl.ID, err
}

// newActs creates n acts of the template for client 1.
func (e *env) newActs(tmpl int64, n int) ([]fetchAct, error) {
	out := make([]fetchAct, 0, n)
	for i := range n {
		var act struct {
			UUID string `json:"uuid"`
			Data []struct {
				ID int64 `json:"id"`
			} `json:"data"`
		}
		if err := e.api("POST", "/api/1.0/acts", map[string]any{"client_id": 1, "template_id": tmpl, "title": fmt.Sprintf("Fetch act %d", i)}, &act, http.StatusCreated); err != nil {
			return nil, err
		}
		fa := fetchAct{UUID: act.UUID}
		for _, dp := range act.Data {
			fa.IDs = append(fa.IDs, dp.ID)
		}
		out = append(out, fa)
	}
	return out, nil
}

// measureFetch creates one fetch request per act, one after the other, and
// times each from the POST to its act.fetch_data delivery's arrival at the
// receiver (the commit's NOTIFY wakes the worker, which claims, signs and
// sends it).
func (e *env) measureFetch(ctx context.Context, r *receiver, acts []fetchAct) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, len(acts))
	for _, a := range acts {
		t := time.Now()
		var fr struct {
			ID string `json:"id"`
		}
		if err := e.api("POST", "/api/1.0/acts/"+a.UUID+"/fetch-requests", map[string]any{"data_point_ids": a.IDs}, &fr, http.StatusCreated); err != nil {
			return nil, err
		}
		at, err := r.wait(ctx, fr.ID)
		if err != nil {
			return nil, err
		}
		lat = append(lat, at.Sub(t))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, nil
}

// waitOutboxIdle returns once no delivery is pending or in flight.
func waitOutboxIdle(ctx context.Context, d *db.DB) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		p, f, err := outbox.Depth(ctx, d)
		if err != nil {
			return err
		}
		if p+f == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("the outbox did not drain within 2 minutes")
}

// noise reads path of the big tenant from 2 goroutines until stopped.
func (e *env) noise(ctx context.Context, c *http.Client, path string) func() {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, _ = measure(ctx, c, e.FullURL+path, e.host(), e.Token, 1)
			}
		}()
	}
	return func() { cancel(); wg.Wait() }
}

// runScaleClaim is `go run ./bench -scale -only claim`: the outbox claim
// table alone (scale_claim.go), without the big tenant and its server.
func runScaleClaim(ctx context.Context, o options, out io.Writer) error {
	empty, full, closeClaims, err := newClaimPair(ctx, o.databaseURL)
	if err != nil {
		return err
	}
	defer closeClaims()
	fmt.Fprint(out, claimIntro(o.claimRounds))
	fmt.Fprint(out, claimTableHead)
	for _, size := range []int{10_000, 100_000, 1_000_000} {
		if size > o.scaleMax {
			break
		}
		t0 := time.Now()
		if err := claimBench(ctx, empty, full, size, o.claimRounds, out); err != nil {
			return fmt.Errorf("outbox claim: %w", err)
		}
		fmt.Fprintf(os.Stderr, "outbox claim with %d delivered: %s\n", size, time.Since(t0).Round(time.Second))
	}
	return nil
}
