package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/finsvc/finsvc/internal/cluster"
	"github.com/finsvc/finsvc/internal/ratelimit"
)

// runReplicas is `go run ./bench -replicas N`: N real `finsvc serve`
// processes (the built binary) on one fresh PostgreSQL database and Redis.
// It measures the aggregate throughput of GET by id through 1…N replicas
// (round-robin), how long a revoked token stays usable on the other
// replicas, and delivers -replicas-events events emitted through all of them
// to a loopback receiver, counting duplicates.
func runReplicas(ctx context.Context, o options, out io.Writer) error {
	url, drop, err := freshDatabase(ctx, o.databaseURL)
	if err != nil {
		return err
	}
	defer drop()
	// The replicas keep their budgets under the service's own key prefix:
	// a Redis database of the benchmark's own (emptied here) keeps an
	// earlier run's budgets out of this one.
	rdb, err := ratelimit.OpenRedis(o.redisURL)
	if err != nil {
		return err
	}
	err = rdb.FlushDB(ctx).Err()
	rdb.Close()
	if err != nil {
		return fmt.Errorf("empty the benchmark's Redis database %s: %w", o.redisURL, err)
	}
	root, err := cluster.ModuleRoot()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "finsvc-replicas-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := cluster.Build(ctx, root, dir)
	if err != nil {
		return err
	}
	c := cluster.New(cluster.Options{
		Binary: bin, DatabaseURL: url, RedisURL: o.redisURL, Replicas: o.replicas, LogDir: dir,
		Env: map[string]string{"FINSVC_RATE_LIMIT_RPS": "1000000", "FINSVC_RATE_LIMIT_BURST": "1000000", "FINSVC_LOG_LEVEL": "warn"},
	}, "bench-replicas-secret-"+randHex(24))
	defer c.Stop()
	if err := c.StartAll(ctx); err != nil {
		return err
	}
	if err := c.Setup(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "%d replicas on one PostgreSQL database and Redis (%s)\n\n", o.replicas, o.redisURL)

	// Revocation: a token cached by every replica, revoked through the
	// first, refused by the others after…
	tok, _, err := c.Authorize(ctx, c.Replicas[0])
	if err != nil {
		return err
	}
	for _, r := range c.Replicas {
		if code, _, _, err := c.Do(ctx, r, "GET", "/api/1.0/me", tok, nil); err != nil || code != 200 {
			return fmt.Errorf("warm replica %d: %d %v", r.N, code, err)
		}
	}
	revoked := time.Now()
	if err := c.Revoke(ctx, c.Replicas[0], tok); err != nil {
		return err
	}
	for _, r := range c.Replicas[1:] {
		for {
			code, _, _, err := c.Do(ctx, r, "GET", "/api/1.0/me", tok, nil)
			if err != nil {
				return err
			}
			if code != http.StatusOK {
				fmt.Fprintf(out, "token revoked through replica 1 refused by replica %d after %s\n", r.N, time.Since(revoked).Round(100*time.Microsecond))
				break
			}
			if time.Since(revoked) > 10*time.Second {
				return fmt.Errorf("replica %d accepts a token revoked 10s ago", r.N)
			}
		}
	}

	// Throughput of GET by id through 1…N replicas.
	code, body, _, err := c.Do(ctx, nil, "POST", "/api/1.0/clients", c.Token,
		map[string]any{"company_name": "Acme AB", "org_number": "556000-0001", "country": "SE", "credit_limit": 1000})
	if err != nil || code != http.StatusCreated {
		return fmt.Errorf("create client: %d %s %v", code, body, err)
	}
	var cl struct {
		ID int64 `json:"id"`
	}
	_ = json.Unmarshal(body, &cl)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.conc * 2, DisableCompression: true}}
	fmt.Fprintf(out, "\n| replicas | requests | errors | req/s | p50 | p99 |\n|---:|---:|---:|---:|---:|---:|\n")
	for n := 1; n <= o.replicas; n++ {
		sc := scenario{Name: fmt.Sprintf("GET /clients/{id} via %d", n), Want: 200, Next: func(i int64) (*http.Request, error) {
			r := c.Replicas[i%int64(n)]
			req, err := http.NewRequest("GET", fmt.Sprintf("%s/api/1.0/clients/%d", r.URL, cl.ID), nil)
			if err != nil {
				return nil, err
			}
			req.Host = cluster.Host
			req.Header.Set("Authorization", "Bearer "+c.Token)
			return req, nil
		}}
		res := run(ctx, client, sc, o.conc, o.dur)
		fmt.Fprintf(out, "| %d | %d | %d | %.0f | %s | %s |\n", n, res.N, res.Errors, res.RPS(), ms(Percentile(res.Lat, 50)), ms(Percentile(res.Lat, 99)))
	}

	// Events through every replica, delivered at least once.
	var mu sync.Mutex
	got := map[string]int{}
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var env struct {
			ID string `json:"id"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &env)
		mu.Lock()
		got[env.ID]++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rc.Close()
	code, body, _, err = c.Do(ctx, nil, "POST", "/api/1.0/webhooks", c.Token, map[string]any{"event": "act.created", "target": rc.URL})
	if err != nil || code != http.StatusCreated {
		return fmt.Errorf("register webhook: %d %s %v", code, body, err)
	}
	code, body, _, err = c.Do(ctx, nil, "POST", "/api/1.0/templates", c.Token, map[string]any{"name": "T",
		"fields": []map[string]any{{"key": "a", "name": "A", "type": "text", "source": "manual"}}})
	if err != nil || code != http.StatusCreated {
		return fmt.Errorf("create template: %d %s %v", code, body, err)
	}
	var tp struct {
		ID int64 `json:"id"`
	}
	_ = json.Unmarshal(body, &tp)
	start := time.Now()
	var next, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range o.conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(o.events) {
				code, body, _, err := c.Do(ctx, nil, "POST", "/api/1.0/acts", c.Token, map[string]any{"client_id": cl.ID, "template_id": tp.ID, "title": "Act"})
				if err != nil || code != http.StatusCreated {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("%d %.200s %v", code, body, err))
				}
			}
		}()
	}
	wg.Wait()
	emitted := int64(o.events) - failed.Load()
	if e := firstErr.Load(); e != nil {
		fmt.Fprintf(out, "first failed act creation: %s\n", e)
	}
	emitTook := time.Since(start)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		mu.Lock()
		n := int64(len(got))
		mu.Unlock()
		if n >= emitted {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d events delivered within 5 minutes", n, emitted)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	dups := 0
	for _, n := range got {
		dups += n - 1
	}
	mu.Unlock()
	fmt.Fprintf(out, "\n%d acts created through %d replicas in %s (%d failed); every event delivered %s after the first; %d duplicates (%.3f%%)\n",
		emitted, o.replicas, emitTook.Round(time.Millisecond), failed.Load(), time.Since(start).Round(time.Millisecond), dups, 100*float64(dups)/float64(emitted))
	return nil
}
