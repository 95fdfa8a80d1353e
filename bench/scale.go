package main

import (
	"context"
	"fmt"
	"github.com/finsvc/finsvc/pkg/acts"
	"io"
	"net/http"
	"os"
	"sort"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/pkg/tenant"
)

// runScale is `go run ./bench -scale`: one big tenant grown through 10k,
// 100k and 1M clients (and a fifth as many acts, ten data points each),
// beside a small tenant, measuring list and read latency at each size
// through the full server. Rows are written with INSERT … SELECT
// generate_series (the triggers count them as they would a COPY). Bounded:
// -scale-max caps the largest size; each measurement is -scale-n requests.
func runScale(ctx context.Context, o options, out io.Writer) error {
	d, url, done, err := openFresh(ctx, o.databaseURL)
	if err != nil {
		return err
	}
	defer done()
	e, err := start(ctx, d, url, true, false, io.Discard)
	if err != nil {
		return err
	}
	defer e.Close()
	if err := e.login(ctx); err != nil {
		return fmt.Errorf("oauth flow: %w", err)
	}
	small, err := tenant.NewStore(d).Create(ctx, "small", "Small")
	if err != nil {
		return err
	}
	big := e.Tenant.ID
	if err := d.Exec(`INSERT INTO templates (tenant_id, id, family_id, version, name) VALUES (?, 1, 1, 1, 'T'), (?, 1, 1, 1, 'T')`, big, small.ID).Error; err != nil {
		return err
	}
	if err := d.Exec(`INSERT INTO template_fields (tenant_id, id, template_id, position, key, name, type, source)
		SELECT ?, g, 1, g, 'f' || g, 'Field ' || g, 'text', 'manual' FROM generate_series(1, 10) g`, big).Error; err != nil {
		return fmt.Errorf("template fields: %w", err)
	}
	if err := d.Exec(`INSERT INTO clients (tenant_id, id, company_name, org_number, country, credit_limit)
		SELECT ?, g, 'Small ' || g, '559' || g, 'SE', 100 FROM generate_series(1, 500) g`, small.ID).Error; err != nil {
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
		if err := seedScale(d.DB, big, have, size); err != nil {
			return fmt.Errorf("seed %d: %w", size, err)
		}
		have = size
		fmt.Fprintf(os.Stderr, "seeded %d clients, %d acts, %d data points in %s\n", size, size/5, size*2, time.Since(t0).Round(time.Second))
		acts := size / 5
		var actUUID string
		if err := d.Raw(`SELECT uuid::text FROM acts WHERE tenant_id = ? ORDER BY created_at DESC LIMIT 1 OFFSET ?`, big, acts/2).Scan(&actUUID).Error; err != nil {
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
			{"acts/{uuid} (10 data points)", "/api/1.0/acts/" + actUUID, e.Token},
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
			lat, err := measure(ctx, client, e.FullURL+r.path, host, r.token, o.scaleN)
			if stopNoise != nil {
				stopNoise()
			}
			if err != nil {
				return fmt.Errorf("%s: %w", r.name, err)
			}
			fmt.Fprintf(out, "| %d | %d | %d | %s | %s | %s |\n", size, acts, size*2, r.name, ms(Percentile(lat, 50)), ms(Percentile(lat, 99)))
		}
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
			fmt.Fprintf(out, "| %d | %d | %d | %s (SQL only) | %s | %s |\n", size, acts, size*2, q.name, ms(Percentile(lat, 50)), ms(Percentile(lat, 99)))
		}
	}
	return nil
}

// seedScale grows the big tenant from have to want clients, a fifth as
// many acts (a quarter of them final, numbered in creation order) and ten
// data points per act, then refreshes the planner's statistics.
// actUUID is act g's uuid in SQL: deterministic, and a valid version-4
// UUID (the API's path parameters are validated as such).
const actUUID = `(substr(md5('act' || g), 1, 12) || '4' || substr(md5('act' || g), 14, 3) || '8' || substr(md5('act' || g), 18, 15))::uuid`

func seedScale(d *gorm.DB, tid int64, have, want int) error {
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO clients (tenant_id, id, company_name, org_number, country, credit_limit)
		 SELECT ?, g, 'Client ' || g, '556' || g, 'SE', 1000 FROM generate_series(?::bigint + 1, ?::bigint) g`,
			[]any{tid, have, want}},
		{`INSERT INTO acts (tenant_id, uuid, client_id, template_id, title, status, created_at, seq)
		 SELECT ?, ` + actUUID + `, 1 + (g * 7919) % ?::bigint, 1, 'Act ' || g,
		        CASE WHEN g % 4 = 0 THEN 'final' ELSE 'draft' END, timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second', g
		 FROM generate_series(?::bigint / 5 + 1, ?::bigint / 5) g`,
			[]any{tid, want, have, want}},
		// The acts' creation numbers continue after the seeded ones.
		{`INSERT INTO id_sequences (tenant_id, name, next_id) VALUES (?, '` + acts.SeqName + `', ?::bigint / 5 + 1)
		 ON CONFLICT (tenant_id, name) DO UPDATE SET next_id = EXCLUDED.next_id`,
			[]any{tid, want}},
		{`INSERT INTO data_points (tenant_id, id, act_uuid, template_field_id, position, key, name, type, source, value)
		 SELECT ?, (g - 1) * 10 + f, ` + actUUID + `, f, f, 'f' || f, 'Field ' || f, 'text', 'manual', 'v' || g
		 FROM generate_series(?::bigint / 5 + 1, ?::bigint / 5) g, generate_series(1, 10) f`,
			[]any{tid, have, want}},
	} {
		if err := d.Exec(q.sql, q.args...).Error; err != nil {
			return err
		}
	}
	return d.Exec("ANALYZE").Error
}

// measure sends n sequential GETs and returns their sorted latencies.
func measure(ctx context.Context, c *http.Client, url, host, token string, n int) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	for range n {
		req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
		if err != nil {
			return nil, err
		}
		req.Host = host
		req.Header.Set("Authorization", "Bearer "+token)
		t := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %d", url, resp.StatusCode)
		}
		lat = append(lat, time.Since(t))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, nil
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
