package cluster_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/cluster"
	"github.com/finsvc/finsvc/internal/testdb"
)

// Keyed POSTs survive replicas killed with SIGKILL in the middle of them.
// Two real `finsvc serve` processes; workers create acts, each with a key of
// its own that they retry (on any live replica) until it is acknowledged;
// meanwhile one replica after the other is killed and replaced. Then:
// acknowledged == created, no act twice, one act.created event per act,
// and no request waited longer than a replica's restart for its answer
// (no lease to wait out after a crash).
func TestKeyedPostsSurviveKills(t *testing.T) {
	if os.Getenv(EnvReplicas) != "1" {
		t.Skipf("set %s=1 to run the multi-replica test (builds the binary, starts processes)", EnvReplicas)
	}
	pooled, direct := testdb.EmptyPostgres(t)
	ctx := t.Context()
	root, err := cluster.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := cluster.Build(ctx, root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var sb [24]byte
	_, _ = rand.Read(sb[:])
	c := cluster.New(cluster.Options{
		Binary: bin, DatabaseURL: pooled, DirectURL: direct, RedisURL: redisURLFor(t), Replicas: 2, LogDir: t.TempDir(),
		Env: map[string]string{"FINSVC_RATE_LIMIT_RPS": "100000", "FINSVC_RATE_LIMIT_BURST": "100000"},
	}, "cluster-test-secret-"+hex.EncodeToString(sb[:]))
	t.Cleanup(c.Stop)
	if err := c.StartAll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	mustCreate := func(path string, body any) int64 {
		code, b, _, err := c.Do(ctx, c.Replicas[0], "POST", path, c.Token, body)
		if err != nil || code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s %v", path, code, b, err)
		}
		var v struct{ ID int64 }
		_ = json.Unmarshal(b, &v)
		return v.ID
	}
	client := mustCreate("/api/1.0/clients", map[string]any{"company_name": "Kill AS", "org_number": "1", "country": "NO", "credit_limit": 1})
	tpl := mustCreate("/api/1.0/templates", map[string]any{"name": "T", "fields": []any{map[string]any{"key": "k", "name": "K", "type": "text", "source": "manual"}}})

	const (
		workers  = 8
		duration = 15 * time.Second
		kills    = 5
	)
	var (
		mu       sync.Mutex
		acked    []string
		maxWait  time.Duration
		attempts atomic.Int64
	)
	runCtx, stop := context.WithTimeout(ctx, duration)
	defer stop()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; runCtx.Err() == nil; i++ {
				key := fmt.Sprintf("w%d-%d", w, i)
				body := map[string]any{"client_id": client, "template_id": tpl, "title": key}
				start := time.Now()
				for {
					attempts.Add(1)
					code, _, h, err := c.DoHeader(ctx, nil, "POST", "/api/1.0/acts", c.Token, body, http.Header{"Idempotency-Key": {key}})
					if err == nil && code == http.StatusCreated {
						_ = h
						break
					}
					if err == nil && code != http.StatusConflict && code < 500 {
						t.Errorf("%s: %d", key, code)
						return
					}
					if time.Since(start) > time.Minute {
						t.Errorf("%s: no answer within a minute", key)
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
				mu.Lock()
				acked = append(acked, key)
				maxWait = max(maxWait, time.Since(start))
				mu.Unlock()
			}
		})
	}
	// The killer: SIGKILL one live replica, start a replacement.
	for k := range kills {
		select {
		case <-runCtx.Done():
		case <-time.After(duration / (kills + 1)):
		}
		victim := c.Next()
		victim.Kill()
		if _, err := c.Start(ctx); err != nil {
			t.Fatalf("kill %d: restart: %v", k, err)
		}
	}
	wg.Wait()

	pg, err := sql.Open("pgx", direct)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	rows, err := pg.QueryContext(ctx, `SELECT title FROM acts`)
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		titles = append(titles, s)
	}
	rows.Close()
	var events int
	if err := pg.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE kind = 'act.created'`).Scan(&events); err != nil {
		t.Fatal(err)
	}
	slices.Sort(titles)
	slices.Sort(acked)
	dups := len(titles) - len(slices.Compact(slices.Clone(titles)))
	t.Logf("%d kills; %d acknowledged, %d acts, %d duplicates, %d act.created events; %d requests sent; longest wait for an answer %v",
		kills, len(acked), len(titles), dups, events, attempts.Load(), maxWait)
	if len(acked) == 0 || !slices.Equal(titles, acked) || dups != 0 || events != len(titles) {
		t.Fatalf("acknowledged %d, created %d (%d duplicates), %d events; want all equal and no duplicate\nacked %s\nacts  %s",
			len(acked), len(titles), dups, events, strings.Join(acked, ","), strings.Join(titles, ","))
	}
	// A replica's restart takes a few seconds on a loaded machine; a lease
	// would have been two minutes.
	if maxWait > 20*time.Second {
		t.Fatalf("a request waited %v for its answer", maxWait)
	}
}
