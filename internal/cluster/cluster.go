// Package cluster runs several real `finsvc serve` processes (the built
// binary) on loopback ports against one PostgreSQL database and one Redis,
// the way production runs replicas, for the multi-replica test
// (FINSVC_TEST_REPLICAS=1) and `go run ./bench -replicas N`.
//
// It drives the replicas only from outside: the CLI to create the tenant,
// user and app, the browser OAuth flow for a token, and HTTP.
package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Tenant and credentials the cluster sets up.
const (
	Slug     = "acme"
	Host     = Slug + ".localhost"
	Email    = "admin@acme.example.com"
	Password = "cluster password 0123456789"
	Redirect = "https://app.example.com/callback"
)

// Options configure a cluster.
type Options struct {
	Binary      string // the finsvc binary (Build)
	DatabaseURL string // FINSVC_DATABASE_URL (may go through PgBouncer)
	DirectURL   string // FINSVC_DATABASE_DIRECT_URL (may be empty)
	RedisURL    string
	Replicas    int
	// Env adds or overrides FINSVC_* settings of every replica.
	Env map[string]string
	// LogDir receives each replica's log (replica-N.log).
	LogDir string
}

// Replica is one running process.
type Replica struct {
	N    int
	URL  string // http://127.0.0.1:port
	Log  string // its log file
	cmd  *exec.Cmd
	done chan error
}

// Cluster is the running replicas and the credentials of the tenant's admin.
type Cluster struct {
	Replicas []*Replica
	opts     Options
	secret   string

	ClientID, ClientSecret string
	Token, RefreshToken    string

	mu       sync.Mutex
	rr       int
	replaced int // replicas replaced so far (Replace), for log names
}

// Build compiles cmd/finsvc into dir and returns the binary's path. root is
// the module root (the directory holding go.mod).
func Build(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "finsvc")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/finsvc")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build finsvc: %v\n%s", err, out)
	}
	return bin, nil
}

// ModuleRoot finds the directory of go.mod from the working directory up.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cluster: go.mod not found")
		}
		dir = parent
	}
}

// Env is the environment every replica gets.
func (c *Cluster) env() []string {
	env := map[string]string{
		"FINSVC_DATABASE_URL":          c.opts.DatabaseURL,
		"FINSVC_DATABASE_DIRECT_URL":   c.opts.DirectURL,
		"FINSVC_REDIS_URL":             c.opts.RedisURL,
		"FINSVC_SECRET":                c.secret,
		"FINSVC_BASE_DOMAIN":           "localhost",
		"FINSVC_WEBHOOK_ALLOW_PRIVATE": "true",
		"FINSVC_LOG_FORMAT":            "json",
		"FINSVC_LOG_LEVEL":             "info",
	}
	for k, v := range c.opts.Env {
		env[k] = v
	}
	out := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range env {
		if v != "" {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// New prepares a cluster (nothing runs yet). secret is the shared
// FINSVC_SECRET.
func New(opts Options, secret string) *Cluster {
	return &Cluster{opts: opts, secret: secret}
}

// CLI runs the binary with args in the cluster's environment.
func (c *Cluster) CLI(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.opts.Binary, args...)
	cmd.Env = c.env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("finsvc %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

// StartAll starts the replicas at the same moment and waits until every one
// is ready.
func (c *Cluster) StartAll(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, c.opts.Replicas)
	c.Replicas = make([]*Replica, c.opts.Replicas)
	for i := range c.opts.Replicas {
		r, err := c.spawn(i + 1)
		if err != nil {
			return err
		}
		c.Replicas[i] = r
	}
	for i, r := range c.Replicas {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = r.waitReady(ctx) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Start starts one more replica and waits until it is ready.
func (c *Cluster) Start(ctx context.Context, extraEnv ...string) (*Replica, error) {
	c.mu.Lock()
	n := len(c.Replicas) + 1
	c.mu.Unlock()
	r, err := c.spawn(n, extraEnv...)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.Replicas = append(c.Replicas, r)
	c.mu.Unlock()
	return r, r.waitReady(ctx)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (c *Cluster) spawn(n int, extraEnv ...string) (*Replica, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(c.opts.LogDir, fmt.Sprintf("replica-%d.log", n))
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(c.opts.Binary, "serve", "--addr", addr)
	cmd.Env = append(c.env(), extraEnv...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	r := &Replica{N: n, URL: "http://" + addr, Log: logPath, cmd: cmd, done: make(chan error, 1)}
	go func() { r.done <- cmd.Wait(); logf.Close() }()
	return r, nil
}

func (r *Replica) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-r.done:
			r.done <- err
			log, _ := os.ReadFile(r.Log)
			return fmt.Errorf("replica %d exited before it was ready: %v\n%s", r.N, err, tail(log))
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", r.URL+"/readyz", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("replica %d not ready within 60s", r.N)
}

func tail(b []byte) string {
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// CLIEnv is CLI with extraEnv ("KEY=value") added to the cluster's
// environment (a command run with another key ring, say).
func (c *Cluster) CLIEnv(ctx context.Context, extraEnv []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.opts.Binary, args...)
	cmd.Env = append(c.env(), extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("finsvc %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

// Replace is one step of a rolling restart, the way a load balancer runs
// it: it starts a replacement of r with extraEnv added to the cluster's
// environment, puts it in r's place in the rotation once it is ready
// (Next no longer returns r), then stops r gracefully (SIGTERM: r finishes
// its in-flight requests).
func (c *Cluster) Replace(ctx context.Context, r *Replica, extraEnv ...string) (*Replica, error) {
	c.mu.Lock()
	c.replaced++
	n := len(c.Replicas) + c.replaced
	c.mu.Unlock()
	nr, err := c.spawn(n, extraEnv...)
	if err != nil {
		return nil, err
	}
	if err := nr.waitReady(ctx); err != nil {
		nr.Kill()
		return nil, err
	}
	c.mu.Lock()
	for i := range c.Replicas {
		if c.Replicas[i] == r {
			c.Replicas[i] = nr
		}
	}
	c.mu.Unlock()
	r.stop()
	return nr, nil
}

// Kill ends the replica with SIGKILL (a crash: nothing is released).
func (r *Replica) Kill() {
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.done
	r.done <- nil
}

// Stop ends every replica still running (SIGTERM, then SIGKILL after 15 s).
func (c *Cluster) Stop() {
	for _, r := range c.Replicas {
		r.stop()
	}
}

// stop ends r with SIGTERM, then SIGKILL after 15 s.
func (r *Replica) stop() {
	select {
	case err := <-r.done:
		r.done <- err
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(15 * time.Second):
		_ = r.cmd.Process.Signal(syscall.SIGKILL)
		<-r.done
	}
	r.done <- nil
}

// Next returns the replicas in turn (the round-robin client in front).
func (c *Cluster) Next() *Replica {
	c.mu.Lock()
	defer c.mu.Unlock()
	for range len(c.Replicas) {
		r := c.Replicas[c.rr%len(c.Replicas)]
		c.rr++
		select {
		case err := <-r.done: // exited: skip it
			r.done <- err
			continue
		default:
			return r
		}
	}
	return c.Replicas[0]
}

// Do sends an API request with the tenant's Host and token to replica r
// (nil: the next in turn) and returns the status and body.
func (c *Cluster) Do(ctx context.Context, r *Replica, method, path, token string, body any) (int, []byte, http.Header, error) {
	return c.DoHeader(ctx, r, method, path, token, body, nil)
}

// DoHeader is Do with extra request headers.
func (c *Cluster) DoHeader(ctx context.Context, r *Replica, method, path, token string, body any, h http.Header) (int, []byte, http.Header, error) {
	if r == nil {
		r = c.Next()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.URL+path, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Host = Host
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header, nil
}

// Setup creates the tenant, its admin and an app through the CLI, then runs
// the OAuth code flow through replica r for the admin's tokens.
func (c *Cluster) Setup(ctx context.Context) error {
	if _, err := c.CLI(ctx, "tenant", "create", Slug); err != nil {
		return err
	}
	if _, err := c.CLI(ctx, "user", "create", "--tenant", Slug, "--email", Email, "--role", "admin", "--password", Password); err != nil {
		return err
	}
	out, err := c.CLI(ctx, "app", "create", "--tenant", Slug, "--name", "Cluster", "--redirect-uri", Redirect, "--json")
	if err != nil {
		return err
	}
	var app struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if err := json.Unmarshal([]byte(out), &app); err != nil {
		return fmt.Errorf("app create output %q: %w", out, err)
	}
	c.ClientID, c.ClientSecret = app.ClientID, app.ClientSecret
	c.Token, c.RefreshToken, err = c.Authorize(ctx, c.Replicas[0])
	return err
}

// Authorize signs the admin in on replica r and runs consent and the code
// exchange for a new access and refresh token.
func (c *Cluster) Authorize(ctx context.Context, r *Replica) (access, refresh string, err error) {
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path string, form url.Values) (int, string, http.Header, error) {
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, _ := http.NewRequestWithContext(ctx, method, r.URL+path, body)
		req.Host = Host
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := browser.Do(req)
		if err != nil {
			return 0, "", nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header, nil
	}
	if err := SignIn(do, Email, Password); err != nil {
		return "", "", err
	}
	return CodeFlow(do, c.ClientID, c.ClientSecret, Redirect, "", fmt.Sprintf("cluster-%d", time.Now().UnixNano()))
}

// Revoke revokes token through replica r.
func (c *Cluster) Revoke(ctx context.Context, r *Replica, token string) error {
	form := url.Values{"token": {token}, "client_id": {c.ClientID}, "client_secret": {c.ClientSecret}}
	req, _ := http.NewRequestWithContext(ctx, "POST", r.URL+"/api/oauth/revoke", strings.NewReader(form.Encode()))
	req.Host = Host
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("revoke: %d", resp.StatusCode)
	}
	return nil
}

// Metric reads the value of one sample line (name with labels, as printed)
// from replica r's /metrics; ok is false when absent.
func (r *Replica) Metric(ctx context.Context, sample string) (v float64, ok bool, err error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", r.URL+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if rest, found := strings.CutPrefix(line, sample+" "); found {
			_, err := fmt.Sscan(rest, &v)
			return v, err == nil, err
		}
	}
	return 0, false, nil
}
