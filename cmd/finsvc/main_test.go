package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/demo"
	"github.com/finsvc/finsvc/internal/testdb"
)

// syncBuffer is safe to write from a running command while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type result struct {
	code           int
	stdout, stderr string
}

// exec runs the CLI with env as the only environment.
func exec(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb syncBuffer
	c := &cli{stdout: &out, stderr: &errb, getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	code := run(t.Context(), args, c)
	return result{code, out.String(), errb.String()}
}

func TestUsageErrorsExit2WithOneLine(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"bogus"},
		{"serve", "--nope"},
		{"serve", "extra"},
		{"serve", "--fetch-window", "soon"},
		{"serve", "--log-format", "xml"},
		{"serve", "--tls-cert", "c.pem"},
		{"tenant"},
		{"tenant", "delete"},
		{"tenant", "create"},
		{"tenant", "create", "a", "b"},
		{"user", "create", "--email", "a@b.io", "--role", "admin"},
		{"user", "create", "--tenant", "acme", "--role", "admin"},
		{"migrate", "--status", "--down-to", "0"},
		{"demo", "--bogus"},
	} {
		r := exec(t, nil, args...)
		if r.code != 2 {
			t.Errorf("finsvc %v: exit %d, want 2 (stderr %q)", args, r.code, r.stderr)
			continue
		}
		if len(args) == 0 {
			if !strings.Contains(r.stderr, "Usage: finsvc") {
				t.Errorf("finsvc without arguments: stderr %q lacks usage", r.stderr)
			}
			continue
		}
		if strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "finsvc") {
			t.Errorf("finsvc %v: stderr %q, want one line", args, r.stderr)
		}
	}
	r := exec(t, map[string]string{"FINSVC_FETCH_WINDOW": "x", "FINSVC_TRUST_PROXY": "maybe"}, "serve")
	if r.code != 2 || !strings.Contains(r.stderr, "FINSVC_FETCH_WINDOW") || !strings.Contains(r.stderr, "FINSVC_TRUST_PROXY") ||
		strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("bad env: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"help"}, {"-h"},
		{"serve", "--help"}, {"migrate", "--help"}, {"demo", "-h"},
		{"tenant", "--help"}, {"tenant", "create", "--help"}, {"user", "create", "--help"},
	} {
		r := exec(t, nil, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Usage: finsvc") || r.stderr != "" {
			t.Errorf("finsvc %v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	// serve --help lists every setting with its env var and default, and
	// never shows a value from the environment.
	r := exec(t, map[string]string{"FINSVC_DATABASE_URL": "postgres://u:hunter2@db/x", "FINSVC_SECRET": strings.Repeat("k", 40)}, "serve", "--help")
	for _, s := range config.List() {
		if !strings.Contains(r.stdout, s.Env) || (s.Flag != "" && !strings.Contains(r.stdout, "--"+s.Flag)) {
			t.Errorf("serve --help lacks %s / --%s", s.Env, s.Flag)
		}
	}
	if strings.Contains(r.stdout, "hunter2") || strings.Contains(r.stdout, "kkkkkkkk") {
		t.Error("serve --help shows secrets from the environment")
	}
	r = exec(t, map[string]string{"FINSVC_DATABASE_URL": "postgres://u:hunter2@db/x"}, "user", "create", "--help")
	if strings.Contains(r.stdout, "hunter2") {
		t.Error("user create --help shows the database password from the environment")
	}
}

func TestTenantAndUserCreate(t *testing.T) {
	data := t.TempDir()
	env := map[string]string{"FINSVC_DATA_DIR": data, "FINSVC_LOG_LEVEL": "warn"}

	r := exec(t, env, "tenant", "create", "acme", "--name", "Acme Inc")
	if r.code != 0 || !strings.Contains(r.stdout, "created tenant acme") {
		t.Fatalf("tenant create: %+v", r)
	}
	r = exec(t, env, "tenant", "create", "acme")
	if r.code != 1 || !strings.Contains(r.stderr, "already exists") {
		t.Errorf("duplicate tenant: %+v", r)
	}
	r = exec(t, env, "tenant", "create", "Not_OK")
	if r.code != 1 || !strings.Contains(r.stderr, "slug must be") {
		t.Errorf("bad slug: %+v", r)
	}
	r = exec(t, env, "tenant", "create", "--json", "beta")
	var tn struct {
		ID   int64
		Slug string
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &tn) != nil || tn.Slug != "beta" || tn.ID == 0 {
		t.Errorf("tenant create --json: %+v", r)
	}

	r = exec(t, env, "user", "create", "--tenant", "acme", "--email", "Alice@Acme.io", "--role", "admin")
	m := regexp.MustCompile(`(?m)^password: (\S+)$`).FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil || !strings.Contains(r.stdout, "created user 1 alice@acme.io (admin) in tenant acme") || !strings.Contains(r.stdout, "one-time password") {
		t.Fatalf("user create: %+v", r)
	}
	r = exec(t, env, "user", "create", "--tenant", "acme", "--email", "bob@acme.io", "--role", "viewer", "--password", "cantaloupe in a red wheelbarrow", "--json")
	var u struct {
		ID       int64
		Password string
		Role     string
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &u) != nil || u.ID != 2 || u.Password != "" || u.Role != "viewer" {
		t.Errorf("user create --json with a given password: %+v (%+v)", r, u)
	}
	// Same email in the other tenant: allowed, and ids are per tenant.
	r = exec(t, env, "user", "create", "--tenant", "beta", "--email", "alice@acme.io", "--role", "member")
	if r.code != 0 || !strings.Contains(r.stdout, "created user 1 ") {
		t.Errorf("user in second tenant: %+v", r)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tenant", "acme", "--email", "alice@acme.io", "--role", "admin"}, "already exists"},
		{[]string{"--tenant", "acme", "--email", "x@acme.io", "--role", "owner"}, "role must be"},
		{[]string{"--tenant", "acme", "--email", "x@acme.io", "--role", "admin", "--password", "short"}, "password must be"},
		{[]string{"--tenant", "nope", "--email", "x@acme.io", "--role", "admin"}, `tenant "nope" not found`},
	} {
		r := exec(t, env, append([]string{"user", "create"}, tc.args...)...)
		if r.code != 1 || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("user create %v: %+v, want exit 1 with %q", tc.args, r, tc.want)
		}
	}

	r = exec(t, env, "migrate", "--status")
	if r.code != 0 || !regexp.MustCompile(`sqlite schema at version (\d+) \(latest (\d+)\)`).MatchString(r.stdout) {
		t.Errorf("migrate --status: %+v", r)
	}
	fi, err := os.Stat(filepath.Join(data, "finsvc.db"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("database file: %v, mode %v; want 0600", err, fi.Mode())
	}
}

func TestMigrateDownAndUp(t *testing.T) {
	env := map[string]string{"FINSVC_DATA_DIR": t.TempDir(), "FINSVC_LOG_LEVEL": "warn"}
	if r := exec(t, env, "migrate"); r.code != 0 {
		t.Fatalf("migrate: %+v", r)
	}
	if r := exec(t, env, "migrate", "--down-to", "0"); r.code != 0 || !strings.Contains(r.stdout, "version 0 ") {
		t.Fatalf("migrate --down-to 0: %+v", r)
	}
	if r := exec(t, env, "tenant", "create", "acme", "--no-migrate"); r.code != 1 {
		t.Errorf("tenant create on an empty schema with --no-migrate: %+v", r)
	}
	if r := exec(t, env, "tenant", "create", "acme"); r.code != 0 {
		t.Errorf("tenant create migrates first: %+v", r)
	}
}

// A roll back below the audit log's migration is refused while the log
// holds records, saying what would be lost and changing nothing; naming
// the table with --discard destroys it. On both dialects.
func TestMigrateDownRefusesToDropTheAuditLog(t *testing.T) {
	eachDialect(t, migrateDownRefusesToDropTheAuditLog)
}

func migrateDownRefusesToDropTheAuditLog(t *testing.T, env map[string]string) {
	if r := exec(t, env, "tenant", "create", "acme"); r.code != 0 {
		t.Fatalf("tenant create: %+v", r)
	}
	if r := exec(t, env, "user", "create", "--tenant", "acme", "--email", "ola@acme.example.com", "--role", "member"); r.code != 0 {
		t.Fatalf("user create (an audit record): %+v", r)
	}
	status := func() string {
		t.Helper()
		r := exec(t, env, "migrate", "--status")
		if r.code != 0 {
			t.Fatalf("migrate --status: %+v", r)
		}
		return r.stdout
	}
	before := status()
	r := exec(t, env, "migrate", "--down-to", "0")
	if r.code == 0 || !strings.Contains(r.stderr, "audit_log") || !strings.Contains(r.stderr, "--discard audit_log") {
		t.Fatalf("migrate --down-to 0 with audit records: %+v", r)
	}
	if got := status(); got != before {
		t.Fatalf("a refused roll back changed the schema: %q → %q", before, got)
	}
	if r := exec(t, env, "migrate", "--down-to", "0", "--discard", "users"); r.code == 0 {
		t.Fatalf("--discard of a table that is not kept: %+v", r)
	}
	if r := exec(t, env, "migrate", "--down-to", "0", "--discard", "audit_log"); r.code != 0 || !strings.Contains(r.stdout, "version 0 ") {
		t.Fatalf("migrate --down-to 0 --discard audit_log: %+v", r)
	}
}

// startCmd runs the CLI in the background; stop cancels it and returns its
// exit status.
func startCmd(t *testing.T, env map[string]string, args ...string) (stdout, stderr *syncBuffer, stop func() int) {
	t.Helper()
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	c := &cli{stdout: stdout, stderr: stderr, getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, c) }()
	var once sync.Once
	code := -1
	stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(30 * time.Second):
				t.Error("command did not stop within 30s of cancellation")
			}
		})
		return code
	}
	t.Cleanup(func() { stop() })
	return stdout, stderr, stop
}

func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func get(t *testing.T, url, host string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", url, nil)
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestDemo(t *testing.T) {
	data := t.TempDir()
	stdout, _, stop := startCmd(t, map[string]string{"FINSVC_LOG_LEVEL": "warn"}, "demo", "--addr", "127.0.0.1:0", "--data", data)
	infoPath := filepath.Join(data, demo.InfoFile)
	waitFor(t, "demo.json", func() bool { _, err := os.Stat(infoPath); return err == nil })
	waitFor(t, "instructions", func() bool { return strings.Contains(stdout.String(), "curl ") })

	var info demo.Info
	b, _ := os.ReadFile(infoPath)
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^http://demo\.localhost:(\d+)$`).FindStringSubmatch(info.BaseURL)
	if m == nil || m[1] == "0" {
		t.Fatalf("base_url %q lacks the bound port", info.BaseURL)
	}
	if info.Tenant != "demo" || info.AdminEmail != "admin@demo.localhost" || info.AdminPassword == "" {
		t.Errorf("demo.json = %+v", info)
	}
	out := stdout.String()
	for _, want := range []string{info.AdminPassword, "curl -H 'Host: demo.localhost' http://127.0.0.1:" + m[1] + "/healthz", infoPath} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(data, config.SecretFile)); err != nil {
		t.Errorf("demo did not persist a secret: %v", err)
	}

	// The server answers on the bound port (the lead's /healthz).
	code, body := get(t, "http://127.0.0.1:"+m[1]+"/healthz", "demo.localhost")
	if code != http.StatusOK {
		t.Errorf("GET /healthz = %d %s", code, body)
	}
	if got := stop(); got != 0 {
		t.Errorf("demo exit status after cancel = %d, want 0", got)
	}
	// --data kept: the directory survives.
	if _, err := os.Stat(infoPath); err != nil {
		t.Errorf("--data directory was removed: %v", err)
	}
}

func TestDemoTempDirRemoved(t *testing.T) {
	stdout, _, stop := startCmd(t, map[string]string{"FINSVC_LOG_LEVEL": "warn"}, "demo", "--addr", "127.0.0.1:0")
	waitFor(t, "instructions", func() bool { return strings.Contains(stdout.String(), "removed on exit") })
	m := regexp.MustCompile(`details \(JSON\):\s+(\S+)`).FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("no demo.json path in output:\n%s", stdout.String())
	}
	if _, err := os.Stat(m[1]); err != nil {
		t.Fatalf("demo.json missing while running: %v", err)
	}
	if got := stop(); got != 0 {
		t.Errorf("exit %d", got)
	}
	if _, err := os.Stat(filepath.Dir(m[1])); !os.IsNotExist(err) {
		t.Errorf("temp data dir not removed: %v", err)
	}
}

func TestServe(t *testing.T) {
	data := t.TempDir()
	_, stderr, stop := startCmd(t, map[string]string{"FINSVC_DATA_DIR": data, "FINSVC_LOG_FORMAT": "json"}, "serve", "--addr", "127.0.0.1:0")
	addrRE := regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`)
	waitFor(t, "listening log line", func() bool { return addrRE.MatchString(stderr.String()) })
	addr := addrRE.FindStringSubmatch(stderr.String())[1]

	if code, body := get(t, "http://"+addr+"/healthz", "localhost"); code != http.StatusOK {
		t.Errorf("GET /healthz = %d %s", code, body)
	}
	fi, err := os.Stat(filepath.Join(data, config.SecretFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("generated secret file: %v, mode %v", err, fi.Mode())
	}
	secret, _ := os.ReadFile(filepath.Join(data, config.SecretFile))
	if got := stop(); got != 0 {
		t.Errorf("serve exit status after cancel = %d, want 0", got)
	}
	logs := stderr.String()
	if len(secret) == 0 || strings.Contains(logs, strings.TrimSpace(string(secret))) {
		t.Error("the secret appears in the logs")
	}
	for _, want := range []string{`"msg":"starting finsvc"`, `"msg":"shutting down"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}
}

func TestServeFailures(t *testing.T) {
	// Port already taken: exit 1 with a reason.
	_, stderr, stop := startCmd(t, map[string]string{"FINSVC_DATA_DIR": t.TempDir(), "FINSVC_LOG_FORMAT": "json"}, "serve", "--addr", "127.0.0.1:0")
	addrRE := regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`)
	waitFor(t, "listening", func() bool { return addrRE.MatchString(stderr.String()) })
	addr := addrRE.FindStringSubmatch(stderr.String())[1]
	r := exec(t, map[string]string{"FINSVC_DATA_DIR": t.TempDir(), "FINSVC_LOG_LEVEL": "error"}, "serve", "--addr", addr)
	if r.code != 1 || !strings.Contains(r.stderr, "listen on") {
		t.Errorf("serve on a taken port: %+v", r)
	}
	stop()

	// PostgreSQL requires FINSVC_SECRET (replicas must share it).
	if u := os.Getenv(testdb.EnvDatabaseURL); u != "" {
		r := exec(t, map[string]string{"FINSVC_DATABASE_URL": u, "FINSVC_LOG_LEVEL": "error", "FINSVC_NO_MIGRATE": "true"}, "serve", "--addr", "127.0.0.1:0")
		if r.code != 1 || !strings.Contains(r.stderr, "FINSVC_SECRET is required") {
			t.Errorf("serve on postgres without a secret: %+v", r)
		}
		// A direct URL (LISTEN, the migration lock) that does not answer
		// refuses the start with one line naming the variable.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := l.Addr().String()
		l.Close()
		r = exec(t, map[string]string{"FINSVC_DATABASE_URL": u, "FINSVC_SECRET": strings.Repeat("s", 32), "FINSVC_LOG_LEVEL": "info",
			"FINSVC_DATABASE_DIRECT_URL": "postgres://postgres@" + closed + "/test?sslmode=disable"}, "serve", "--addr", "127.0.0.1:0")
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], "finsvc serve: FINSVC_DATABASE_DIRECT_URL: ") || !strings.Contains(lines[0], "connect") {
			t.Errorf("serve with a closed direct URL: %+v", r)
		}
	}
	r = exec(t, map[string]string{"FINSVC_DATABASE_URL": "mysql://x", "FINSVC_LOG_LEVEL": "error"}, "serve")
	if r.code != 1 || !strings.Contains(r.stderr, "unsupported database URL") {
		t.Errorf("bad database URL: %+v", r)
	}
}

func TestCountsCheckAndRebuild(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"FINSVC_DATA_DIR": dir, "FINSVC_LOG_LEVEL": "warn"}
	if r := exec(t, env, "tenant", "create", "acme"); r.code != 0 {
		t.Fatalf("tenant create: %+v", r)
	}
	if r := exec(t, env, "counts", "check"); r.code != 0 || !strings.Contains(r.stdout, "matches") {
		t.Fatalf("counts check on a fresh database: %+v", r)
	}
	// A total written around the triggers, as a restore with triggers
	// disabled would leave it.
	d, err := db.Open(t.Context(), "", dir, testdb.Logger())
	if err != nil {
		t.Fatal(err)
	}
	err = d.Exec("INSERT INTO list_counts (tenant_id, kind, bucket, n) SELECT id, 'clients', '', 7 FROM tenants").Error
	d.Close()
	if err != nil {
		t.Fatal(err)
	}
	if r := exec(t, env, "counts", "check"); r.code != 1 || !strings.Contains(r.stdout, "stored 7, actual 0") || !strings.Contains(r.stderr, "finsvc counts rebuild") {
		t.Fatalf("counts check after corruption: %+v", r)
	}
	if r := exec(t, env, "counts", "rebuild"); r.code != 0 {
		t.Fatalf("counts rebuild: %+v", r)
	}
	if r := exec(t, env, "counts", "check"); r.code != 0 {
		t.Fatalf("counts check after rebuild: %+v", r)
	}
	if r := exec(t, env, "counts", "check", "extra"); r.code != 2 {
		t.Fatalf("counts check with an argument: %+v", r)
	}
}
