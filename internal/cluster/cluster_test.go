package cluster_test

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/redis/go-redis/v9"

	"github.com/finsvc/finsvc/internal/authcache"
	"github.com/finsvc/finsvc/internal/cluster"
	"github.com/finsvc/finsvc/internal/testdb"
)

// EnvReplicas switches the multi-replica test on (CI sets it): it builds
// the binary and runs several processes, which takes a minute.
const EnvReplicas = "FINSVC_TEST_REPLICAS"

// receiver is a webhook target that counts deliveries per event id and
// notices two attempts of one event in flight at once.
type receiver struct {
	mu        sync.Mutex
	got       map[string]int
	inFlight  map[string]bool
	overlaps  int
	delay     time.Duration
	delivered atomic.Int64
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var env struct {
		ID string `json:"id"`
	}
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &env); err != nil || env.ID == "" {
		http.Error(w, "no event id", http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	if rc.inFlight[env.ID] {
		rc.overlaps++
	}
	rc.inFlight[env.ID] = true
	rc.mu.Unlock()
	time.Sleep(rc.delay)
	rc.mu.Lock()
	delete(rc.inFlight, env.ID)
	rc.got[env.ID]++
	rc.mu.Unlock()
	rc.delivered.Add(1)
	w.WriteHeader(http.StatusNoContent)
}

// redisURLFor returns FINSVC_TEST_REDIS_URL moved to database 9, which the
// test empties: the replicas use the service's own key prefix.
func redisURLFor(t *testing.T) string {
	base := testdb.RedisURL(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/9"
	opts, err := redis.ParseURL(u.String())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	if err := c.FlushDB(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	return u.String()
}

// Three real `finsvc serve` processes on one PostgreSQL database and one
// Redis: they migrate an empty database exactly once, share one rate-limit
// budget, refuse a token revoked through another replica, and deliver every
// event at least once with no delivery attempted twice at the same moment,
// even when one of them is killed with SIGKILL in the middle. A replica
// that cannot reach Redis falls back to its own limiter and says so.
func TestReplicas(t *testing.T) {
	if os.Getenv(EnvReplicas) != "1" {
		t.Skipf("set %s=1 to run the multi-replica test (builds the binary, starts processes)", EnvReplicas)
	}
	pooled, direct := testdb.EmptyPostgres(t)
	redisURL := redisURLFor(t)
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
	logDir := os.Getenv("FINSVC_TEST_REPLICAS_LOGS") // keep the replicas' logs there
	if logDir == "" {
		logDir = t.TempDir()
	}
	const burst = 30
	c := cluster.New(cluster.Options{
		Binary: bin, DatabaseURL: pooled, DirectURL: direct, RedisURL: redisURL, Replicas: 3, LogDir: logDir,
		Env: map[string]string{
			"FINSVC_RATE_LIMIT_RPS": "100000", "FINSVC_RATE_LIMIT_BURST": "100000",
			"FINSVC_RATE_LIMIT_ADDRESS_RPS": "0.001", "FINSVC_RATE_LIMIT_ADDRESS_BURST": strconv.Itoa(burst),
			"FINSVC_WEBHOOK_TIMEOUT": "2s", "FINSVC_WEBHOOK_LEASE": "5s", "FINSVC_TRUST_PROXY": "true",
		},
	}, "cluster-test-secret-"+hex.EncodeToString(sb[:]))
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			for _, r := range c.Replicas {
				b, _ := os.ReadFile(r.Log)
				t.Logf("replica %d log (tail):\n%s", r.N, tailOf(b))
			}
		}
	})

	// Three replicas started at the same moment on an empty database.
	if err := c.StartAll(ctx); err != nil {
		t.Fatal(err)
	}
	applied := 0
	for _, r := range c.Replicas {
		b, _ := os.ReadFile(r.Log)
		applied += strings.Count(string(b), `"msg":"migration applied"`)
	}
	pg, err := sql.Open("pgx", direct)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	var versions, distinct int
	if err := pg.QueryRow(`SELECT count(*), count(DISTINCT version_id) FROM goose_db_version WHERE version_id > 0`).Scan(&versions, &distinct); err != nil {
		t.Fatal(err)
	}
	if versions != distinct || applied != distinct || distinct == 0 {
		t.Fatalf("migrations: %d rows for %d versions, %d 'migration applied' lines across the replicas; want each exactly once", versions, distinct, applied)
	}
	t.Logf("3 replicas started together applied %d migrations once", distinct)

	if err := c.Setup(ctx); err != nil {
		t.Fatal(err)
	}

	// One rate-limit budget across replicas: failed authentications from
	// one client address (told apart by X-Forwarded-For, the replicas
	// trusting the proxy), spread round-robin, are limited exactly as if
	// they all went to one replica.
	codes := map[int]int{}
	for range burst + 15 {
		r := c.Next()
		req, _ := http.NewRequestWithContext(ctx, "GET", r.URL+"/api/1.0/me", nil)
		req.Host = cluster.Host
		req.Header.Set("Authorization", "Bearer garbage")
		req.Header.Set("X-Forwarded-For", "203.0.113.77")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes[resp.StatusCode]++
	}
	if codes[http.StatusUnauthorized] != burst || codes[http.StatusTooManyRequests] != 15 {
		t.Fatalf("%d bad tokens over 3 replicas: %v; want %d×401 and 15×429 (one shared budget)", burst+15, codes, burst)
	}

	// A token revoked through replica 1 is refused by 2 and 3 (each had it
	// cached).
	tok, _, err := c.Authorize(ctx, c.Replicas[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Replicas {
		if code, body, _, err := c.Do(ctx, r, "GET", "/api/1.0/me", tok, nil); err != nil || code != 200 {
			t.Fatalf("replica %d with a fresh token: %d %s %v", r.N, code, body, err)
		}
	}
	revoked := time.Now()
	if err := c.Revoke(ctx, c.Replicas[0], tok); err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Replicas[1:] {
		for {
			code, _, _, err := c.Do(ctx, r, "GET", "/api/1.0/me", tok, nil)
			if err != nil {
				t.Fatal(err)
			}
			if code != http.StatusOK { // 401, or 429 once the address budget is spent
				t.Logf("replica %d refused the token revoked through replica 1 after %s", r.N, time.Since(revoked).Round(100*time.Microsecond))
				break
			}
			if time.Since(revoked) > 5*time.Second {
				t.Fatalf("replica %d still accepts a token revoked 5s ago", r.N)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}

	// Deliveries from every replica, one killed mid-way.
	rc := &receiver{got: map[string]int{}, inFlight: map[string]bool{}, delay: 5 * time.Millisecond}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	post := func(path string, body any) map[string]any {
		t.Helper()
		code, b, _, err := c.Do(ctx, nil, "POST", path, c.Token, body)
		if err != nil || code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s %v", path, code, b, err)
		}
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return out
	}
	post("/api/1.0/webhooks", map[string]any{"event": "act.created", "target": srv.URL + "/hook"})
	cl := post("/api/1.0/clients", map[string]any{"company_name": "Acme AB", "org_number": "556000-0001", "country": "SE", "credit_limit": 1000})
	tp := post("/api/1.0/templates", map[string]any{"name": "T", "fields": []map[string]any{{"key": "a", "name": "A", "type": "text", "source": "manual"}}})
	const acts = 300
	var created, next atomic.Int64
	var wg sync.WaitGroup
	killed := make(chan struct{})
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= acts {
				if next.Load() == acts/2 {
					c.Replicas[2].Kill()
					close(killed)
				}
				for attempt := 0; ; attempt++ {
					code, _, _, err := c.Do(ctx, nil, "POST", "/api/1.0/acts", c.Token, map[string]any{
						"client_id": cl["id"], "template_id": tp["id"], "title": "Act"})
					if err == nil && code == http.StatusCreated {
						created.Add(1)
						break
					}
					if attempt > 5 { // a request to the replica as it died
						t.Errorf("create act: %d %v", code, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	<-killed
	var events []string
	rows, err := pg.Query(`SELECT id::text FROM events WHERE kind = 'act.created'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		_ = rows.Scan(&id)
		events = append(events, id)
	}
	rows.Close()
	if int64(len(events)) < created.Load() {
		t.Fatalf("%d events for %d created acts", len(events), created.Load())
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		rc.mu.Lock()
		missing := 0
		for _, id := range events {
			if rc.got[id] == 0 {
				missing++
			}
		}
		rc.mu.Unlock()
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events never delivered after a replica was killed (the receiver answered %d requests)", missing, len(events), rc.delivered.Load())
		}
		time.Sleep(100 * time.Millisecond)
	}
	rc.mu.Lock()
	dups := 0
	for _, n := range rc.got {
		dups += n - 1
	}
	overlaps := rc.overlaps
	rc.mu.Unlock()
	t.Logf("%d events from 3 replicas (one killed with SIGKILL half-way) delivered; %d duplicates (%.2f%%)", len(events), dups, 100*float64(dups)/float64(len(events)))
	if overlaps != 0 {
		t.Fatalf("%d deliveries were attempted by two workers at the same moment", overlaps)
	}

	// A replica whose LISTEN connection is cut stops trusting its token
	// cache (and says so): a token revoked behind its back, while it could
	// not hear the notification, is refused at once.
	tok2, _, err := c.Authorize(ctx, c.Replicas[0])
	if err != nil {
		t.Fatal(err)
	}
	if code, _, _, err := c.Do(ctx, c.Replicas[0], "GET", "/api/1.0/me", tok2, nil); err != nil || code != 200 {
		t.Fatalf("fresh token: %d %v", code, err)
	}
	if _, err := pg.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`, authcache.ApplicationName); err != nil {
		t.Fatal(err)
	}
	waitLog(t, c.Replicas[0], "token cache listener lost")
	if _, err := pg.Exec(`UPDATE oauth_access_tokens SET active = false WHERE signature = (SELECT signature FROM oauth_access_tokens ORDER BY requested_at DESC LIMIT 1)`); err != nil {
		t.Fatal(err)
	}
	if code, _, _, err := c.Do(ctx, c.Replicas[0], "GET", "/api/1.0/me", tok2, nil); err != nil || code == http.StatusOK {
		t.Fatalf("a token revoked while the listener was down was served (from the cache): %d %v", code, err)
	}

	// A replica without Redis decides in process, logs it once and counts it.
	lone, err := c.Start(ctx, "FINSVC_REDIS_URL=redis://127.0.0.1:1/0")
	if err != nil {
		t.Fatal(err)
	}
	if code, _, _, err := c.Do(ctx, lone, "GET", "/api/1.0/me", c.Token, nil); err != nil || code != http.StatusOK {
		t.Fatalf("replica without Redis: %d %v", code, err)
	}
	v, ok, err := lone.Metric(ctx, "finsvc_rate_limit_fallbacks_total")
	if err != nil || !ok || v < 1 {
		t.Fatalf("finsvc_rate_limit_fallbacks_total = %v (present %v, %v); want at least 1", v, ok, err)
	}
	b, _ := os.ReadFile(lone.Log)
	if !strings.Contains(string(b), "rate limit store failed") {
		t.Fatalf("the replica without Redis did not log the fallback:\n%s", tailOf(b))
	}
}

func tailOf(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// waitLog waits (up to 10 s) until r's log contains s.
func waitLog(t *testing.T, r *cluster.Replica, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(r.Log)
		if strings.Contains(string(b), s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %d never logged %q", r.N, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
