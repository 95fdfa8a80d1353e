package cluster_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/cluster"
	"github.com/finsvc/finsvc/internal/keyring"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/pkg/webhooks/sign"
)

// signedReceiver checks every delivery's signature against the secrets its
// registration is known to have, and counts events per registration.
type signedReceiver struct {
	mu      sync.Mutex
	secrets map[string][]string        // by path
	got     map[string]map[string]bool // path -> event ids
	badSig  atomic.Int64
}

func (rc *signedReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var env struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(b, &env)
	rc.mu.Lock()
	secrets := rc.secrets[r.URL.Path]
	rc.mu.Unlock()
	if err := sign.VerifyAny(secrets, r.Header.Get(sign.HeaderSignature), b, time.Now()); err != nil {
		rc.badSig.Add(1)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	rc.mu.Lock()
	if rc.got[r.URL.Path] == nil {
		rc.got[r.URL.Path] = map[string]bool{}
	}
	rc.got[r.URL.Path][env.ID] = true
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (rc *signedReceiver) count(path string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got[path])
}

// The service secret is rotated under load across two real replicas, by
// the runbook's steps (docs/operations.md), each a rolling restart: add the
// new secret as previous; make it current; `finsvc secret reseal`; drop
// the old secret. Keyed POSTs run throughout (a request that meets a
// replica going away is retried with its key, as a client does; any other
// failure counts), and two registrations, one in a secret overlap, receive
// every act.created. Then: 0 failed requests, 0 deliveries signed with a
// secret the receiver does not know, 0 sealed values under the old key
// after the reseal, and after the old key is gone every webhook still
// delivers and every keyed POST's replay still opens. The token issued
// under the old secret works until the old secret leaves the ring; the
// refreshed one after (documented: old tokens end with the old secret).
func TestSecretRotationUnderLoad(t *testing.T) {
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
	secret := func() string {
		var b [24]byte
		_, _ = rand.Read(b[:])
		return "rotation-test-" + hex.EncodeToString(b[:])
	}
	oldSecret, newSecret := secret(), secret()
	logDir := t.TempDir()
	c := cluster.New(cluster.Options{
		Binary: bin, DatabaseURL: pooled, DirectURL: direct, RedisURL: redisURLFor(t), Replicas: 2, LogDir: logDir,
		Env: map[string]string{"FINSVC_RATE_LIMIT_RPS": "100000", "FINSVC_RATE_LIMIT_BURST": "100000", "FINSVC_WEBHOOK_TIMEOUT": "2s"},
	}, oldSecret)
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			for _, r := range c.Replicas {
				b, _ := os.ReadFile(r.Log)
				t.Logf("replica %d log (tail):\n%s", r.N, tailOf(b))
			}
		}
	})
	if err := c.StartAll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	var token atomic.Value
	token.Store(c.Token)
	post := func(path string, body any) map[string]any {
		t.Helper()
		code, b, _, err := c.Do(ctx, c.Replicas[0], "POST", path, token.Load().(string), body)
		if err != nil || code/100 != 2 {
			t.Fatalf("POST %s: %d %s %v", path, code, b, err)
		}
		var v map[string]any
		_ = json.Unmarshal(b, &v)
		return v
	}
	rc := &signedReceiver{secrets: map[string][]string{}, got: map[string]map[string]bool{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	hooks := []string{"/hook/plain", "/hook/overlap"}
	for i, path := range hooks {
		h := post("/api/1.0/webhooks", map[string]any{"event": "act.created", "target": srv.URL + path})
		secrets := []string{h["secret"].(string)}
		if i == 1 { // a previous secret sealed too
			r := post(fmt.Sprintf("/api/1.0/webhooks/%v/rotate-secret", h["id"]), map[string]any{"previous_secret_expires_in": 604800})
			secrets = append(secrets, r["secret"].(string))
		}
		rc.mu.Lock()
		rc.secrets[path] = secrets
		rc.mu.Unlock()
	}
	client := post("/api/1.0/clients", map[string]any{"company_name": "Rotate AS", "org_number": "1", "country": "NO", "credit_limit": 1})["id"]
	tpl := post("/api/1.0/templates", map[string]any{"name": "T", "fields": []any{map[string]any{"key": "k", "name": "K", "type": "text", "source": "manual"}}})["id"]
	body := func(key string) map[string]any {
		return map[string]any{"client_id": client, "template_id": tpl, "title": key}
	}

	var (
		mu       sync.Mutex
		acked    []string
		failures []string
		retries  atomic.Int64
	)
	started := time.Now()
	runCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; runCtx.Err() == nil; i++ {
				key := fmt.Sprintf("w%d-%d", w, i)
				for attempt := 0; ; attempt++ {
					tok := token.Load().(string)
					code, b, _, err := c.DoHeader(ctx, nil, "POST", "/api/1.0/acts", tok, body(key), http.Header{"Idempotency-Key": {key}})
					if err == nil && code == http.StatusCreated {
						mu.Lock()
						acked = append(acked, key)
						mu.Unlock()
						break
					}
					// The refresh below revokes the access token it
					// replaces (fosite's rotation): a request that took
					// the token just before, or between the refresh and
					// the test storing its result, is refused, as
					// documented, and a client retries with its new token.
					if err == nil && code == http.StatusUnauthorized && attempt < 20 {
						for wait := time.Now().Add(2 * time.Second); token.Load().(string) == tok && time.Now().Before(wait); {
							time.Sleep(10 * time.Millisecond)
						}
						if token.Load().(string) != tok {
							retries.Add(1)
							continue
						}
					}
					if err != nil && attempt < 20 && ctx.Err() == nil { // the replica went away: retry elsewhere
						retries.Add(1)
						time.Sleep(20 * time.Millisecond)
						continue
					}
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s: %d %v %.200s", key, code, err, b))
					mu.Unlock()
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	oldID, newID := keyring.ID(oldSecret), keyring.ID(newSecret)
	roll := func(step string, env ...string) {
		t.Helper()
		for _, r := range append([]*cluster.Replica(nil), c.Replicas...) {
			if _, err := c.Replace(ctx, r, env...); err != nil {
				t.Fatalf("%s: replace replica %d: %v", step, r.N, err)
			}
		}
		time.Sleep(500 * time.Millisecond) // some load on the new ring
	}
	time.Sleep(time.Second)
	roll("add the new secret as previous", "FINSVC_SECRET="+oldSecret, "FINSVC_SECRET_PREVIOUS="+newSecret)
	roll("make it current", "FINSVC_SECRET="+newSecret, "FINSVC_SECRET_PREVIOUS="+oldSecret)
	out, err := c.CLIEnv(ctx, []string{"FINSVC_SECRET=" + newSecret, "FINSVC_SECRET_PREVIOUS=" + oldSecret}, "secret", "reseal", "--batch", "7")
	if err != nil {
		t.Fatalf("reseal: %v\n%s", err, out)
	}
	t.Logf("finsvc secret reseal:\n%s", out)

	pg, err := sql.Open("pgx", direct)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	notCurrent := func() (n int) {
		t.Helper()
		err := pg.QueryRowContext(ctx, `SELECT
			(SELECT count(*) FROM webhooks WHERE secret_ciphertext NOT LIKE $1 OR previous_secret_ciphertext NOT LIKE $1)
			+ (SELECT count(*) FROM idempotency_keys WHERE body NOT LIKE $1)`, "v2:"+newID+":%").Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := notCurrent(); n != 0 {
		t.Fatalf("%d sealed values not under the new key after the reseal", n)
	}
	status, err := c.CLIEnv(ctx, []string{"FINSVC_SECRET=" + newSecret, "FINSVC_SECRET_PREVIOUS=" + oldSecret}, "secret", "status")
	if err != nil || !strings.Contains(status, "key ring: current "+newID+", previous "+oldID) || !strings.Contains(status, "every sealed value is under the current key") {
		t.Fatalf("status after the reseal: %v\n%s", err, status)
	}

	// The old token ends with the old secret: refresh before dropping it.
	fresh := refresh(t, c)
	token.Store(fresh)
	roll("drop the old secret", "FINSVC_SECRET="+newSecret, "FINSVC_SECRET_PREVIOUS=")
	stopLoad()
	wg.Wait()
	t.Logf("three rolling restarts and the reseal under load took %v", time.Since(started).Round(time.Millisecond))
	if code, _, _, err := c.Do(ctx, nil, "GET", "/api/1.0/me", c.Token, nil); err != nil || code != http.StatusUnauthorized {
		t.Fatalf("the token of the dropped secret: %d %v, want 401", code, err)
	}
	if n := notCurrent(); n != 0 {
		t.Fatalf("%d sealed values not under the new key at the end", n)
	}

	// Every keyed POST's stored answer still opens: its replay answers.
	mu.Lock()
	keys := append([]string(nil), acked...)
	mu.Unlock()
	for _, key := range keys {
		code, b, h, err := c.DoHeader(ctx, nil, "POST", "/api/1.0/acts", fresh, body(key), http.Header{"Idempotency-Key": {key}})
		if err != nil || code != http.StatusCreated || h.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay of %s after the old key left: %d %v %s %.200s", key, code, err, h.Get("Idempotent-Replayed"), b)
		}
	}
	// Every registration still delivers: one more act reaches both, and
	// every act.created reached both.
	code, b, _, err := c.Do(ctx, nil, "POST", "/api/1.0/acts", fresh, body("after"))
	if err != nil || code != http.StatusCreated {
		t.Fatalf("act after the rotation: %d %v %s", code, err, b)
	}
	want := len(keys) + 1
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && (rc.count(hooks[0]) < want || rc.count(hooks[1]) < want) {
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d keyed POSTs acknowledged (%d retried: a replica went away, or a refresh revoked the token), %d failed; deliveries %d and %d of %d events; %d badly signed",
		len(keys), retries.Load(), len(failures), rc.count(hooks[0]), rc.count(hooks[1]), want, rc.badSig.Load())
	if len(failures) > 0 {
		t.Errorf("failed requests:\n%s", strings.Join(failures, "\n"))
	}
	if rc.badSig.Load() != 0 {
		t.Errorf("%d deliveries signed with a secret the receiver does not know", rc.badSig.Load())
	}
	if rc.count(hooks[0]) < want || rc.count(hooks[1]) < want {
		t.Errorf("deliveries: %d and %d of %d events", rc.count(hooks[0]), rc.count(hooks[1]), want)
	}
	if len(keys) == 0 {
		t.Error("no load ran")
	}
}

// refresh exchanges the cluster's refresh token for a new access token.
func refresh(t *testing.T, c *cluster.Cluster) string {
	t.Helper()
	form := url.Values{"grant_type": {"refresh_token"}, "client_id": {c.ClientID}, "client_secret": {c.ClientSecret}, "refresh_token": {c.RefreshToken}}
	req, _ := http.NewRequestWithContext(t.Context(), "POST", c.Next().URL+"/api/oauth/token", strings.NewReader(form.Encode()))
	req.Host = cluster.Host
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || json.Unmarshal(b, &tok) != nil || tok.AccessToken == "" {
		t.Fatalf("refresh: %d %s", resp.StatusCode, b)
	}
	return tok.AccessToken
}
