package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/internal/acts"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/cluster"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/jsonlog"
	"github.com/finsvc/finsvc/internal/oauth"
	"github.com/finsvc/finsvc/internal/server"
	"github.com/finsvc/finsvc/internal/templates"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/users"
)

const (
	slug     = "bench"
	host     = slug + ".localhost"
	email    = "admin@bench.example.com"
	password = "bench password 0123456789"
	redirect = "https://bench.example.com/callback"
)

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// freshDatabase creates a new PostgreSQL database next to the one adminURL
// names and returns its URL and a drop function. A sqlite: URL names a
// directory instead: the fresh database is a new file in it, removed (with
// its WAL) by drop.
func freshDatabase(ctx context.Context, adminURL string) (string, func(), error) {
	if dir, ok := strings.CutPrefix(adminURL, "sqlite:"); ok {
		dir = strings.TrimPrefix(dir, "//")
		if dir == "" {
			dir = os.TempDir()
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", nil, err
		}
		path, err := filepath.Abs(filepath.Join(dir, "finsvc_bench_"+randHex(4)+".db"))
		if err != nil {
			return "", nil, err
		}
		return "sqlite://" + path, func() {
			for _, suffix := range []string{"", "-wal", "-shm"} {
				_ = os.Remove(path + suffix)
			}
		}, nil
	}
	u, err := url.Parse(adminURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", nil, fmt.Errorf("database URL must be postgres://… (got %q)", adminURL)
	}
	admin, err := db.Open(ctx, adminURL, "", nil)
	if err != nil {
		return "", nil, err
	}
	name := "finsvc_bench_" + randHex(4)
	if err := admin.Exec("CREATE DATABASE " + name).Error; err != nil {
		admin.Close()
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	u.Path = "/" + name
	drop := func() {
		if err := admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)").Error; err != nil {
			fmt.Printf("warning: drop database %s: %v\n", name, err)
		}
		admin.Close()
	}
	return u.String(), drop, nil
}

// env is the system under test: the real server (full chain) and the bare
// baseline, both in this process over one database pool.
type env struct {
	DB      *db.DB
	Tenant  *tenant.Tenant
	FullURL string // https? no: loopback plain HTTP, like behind a TLS proxy
	BareURL string
	Token   string
	stop    []func()

	clientID, secret string
	browser          *http.Client
	hostName         string // the tenant's host; "" is the bench tenant's
}

// host is the Host header of the env's tenant.
func (e *env) host() string {
	if e.hostName != "" {
		return e.hostName
	}
	return host
}

func (e *env) Close() {
	for i := len(e.stop) - 1; i >= 0; i-- {
		e.stop[i]()
	}
}

// start brings up both servers on loopback ports over d. The full server
// is app.New's, as cmd/finsvc serve builds it. With tokenCache, the server
// gets its database URL, which lets the App run the bearer token cache (its
// LISTEN connection needs the URL). With deliveries, the App's webhook
// delivery worker runs too (the soak); without, deliveries stay pending so
// that the load benchmark measures the request path alone.
func start(ctx context.Context, d *db.DB, dbURL string, tokenCache, deliveries bool, logOut io.Writer) (*env, error) {
	e := &env{DB: d}
	cfg := config.Default()
	cfg.Addr = "127.0.0.1:0"
	if tokenCache {
		cfg.DatabaseURL = dbURL
	}
	cfg.Secret = "bench-secret-" + randHex(24)
	// The limiter stays in the chain (its cost is part of the full chain)
	// with a budget the benchmark cannot exhaust.
	cfg.RateLimitRPS, cfg.RateLimitBurst = 1e6, 1_000_000
	cfg.WebhookAllowPrivate = true
	logger := slog.New(jsonlog.New(logOut, nil)) // production format (config.NewLogger)

	tn, err := tenant.NewStore(d).Create(ctx, slug, "Bench")
	if err != nil {
		return nil, fmt.Errorf("create tenant: %w", err)
	}
	e.Tenant = tn

	opts := []app.Option{app.WithDB(d), app.WithLogger(logger)}
	if !deliveries {
		opts = append(opts, app.WithoutDeliveries())
	}
	a, err := app.New(cfg, opts...)
	if err != nil {
		return nil, err
	}
	e.stop = append(e.stop, func() { _ = a.Close() })
	if err := a.Start(ctx); err != nil {
		e.Close()
		return nil, err
	}
	h := a.Handler()
	url, stop, err := serve(cfg, h)
	if err != nil {
		e.Close()
		return nil, err
	}
	e.FullURL, e.stop = url, append(e.stop, stop)

	// The baselines (baseline.go) on one bare echo server. They read with
	// pgx: on SQLite (the scale run) there is none.
	if d.Dialect == db.SQLite {
		return e, nil
	}
	pool, err := pgxBaseline(ctx, dbURL, "")
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("pgx baseline pool: %w", err)
	}
	e.stop = append(e.stop, pool.Close)
	execPool, err := pgxBaseline(ctx, dbURL, "exec")
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("pgx exec baseline pool: %w", err)
	}
	e.stop = append(e.stop, execPool.Close)
	bare := echo.New()
	var reported atomic.Bool
	bare.HTTPErrorHandler = func(err error, c echo.Context) {
		// wrk sees only the status: say once why a baseline failed.
		if reported.CompareAndSwap(false, true) {
			fmt.Fprintf(os.Stderr, "baseline %s: %v\n", c.Path(), err)
		}
		bare.DefaultHTTPErrorHandler(err, c)
	}
	routeBaselines(bare, pool, execPool, hostTenants{host: tn.ID}, tn, d.DB, acts.NewStore(d, nil, clients.NewStore(d), templates.NewStore(d)))
	url, stop, err = serve(cfg, bare)
	if err != nil {
		e.Close()
		return nil, err
	}
	e.BareURL, e.stop = url, append(e.stop, stop)
	return e, nil
}

// serve runs h through the production serving code (internal/server) on a free
// loopback port.
func serve(cfg *config.Config, h http.Handler) (string, func(), error) {
	c := *cfg
	s, err := server.Listen(&c, nil)
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Serve(ctx, h); close(done) }()
	return "http://" + s.Addr().String(), func() { cancel(); <-done }, nil
}

// login creates an admin and an app, then runs the real authorization-code
// flow (login page, consent, code exchange) for an access token.
func (e *env) login(ctx context.Context) error {
	tctx := tenant.NewContext(ctx, e.Tenant)
	if _, err := users.NewStore(e.DB).Create(tctx, email, "Bench Admin", auth.RoleAdmin, password); err != nil {
		return fmt.Errorf("create admin: %w", err)
	}
	clientID, secret, err := oauth.CreateApp(ctx, e.DB, e.Tenant.ID, "Bench", []string{redirect}, auth.AllScopes)
	if err != nil {
		return fmt.Errorf("create app: %w", err)
	}
	e.clientID, e.secret = clientID, secret
	jar, _ := cookiejar.New(nil)
	e.browser = &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if err := cluster.SignIn(e.do, email, password); err != nil {
		return err
	}
	e.Token, err = e.authorize()
	return err
}

// do sends a browser request (cookies kept, redirects not followed).
func (e *env) do(method, path string, form url.Values) (int, string, http.Header, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, e.FullURL+path, body)
	req.Host = e.host()
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := e.browser.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header, nil
}

// authorize runs consent and the code exchange (signed in) for a new access
// token.
func (e *env) authorize() (string, error) {
	access, _, err := cluster.CodeFlow(e.do, e.clientID, e.secret, redirect, strings.Join(auth.AllScopes, " "), "bench-"+randHex(6))
	return access, err
}

// checkRevocation proves that the token cache does not outlive a
// revocation: a second token is used (and so cached), revoked through
// /api/oauth/revoke, and must be refused at once. It returns how long the
// refusal took to appear.
func (e *env) checkRevocation() (time.Duration, error) {
	tok, err := e.authorize()
	if err != nil {
		return 0, err
	}
	status := func() (int, error) {
		req, _ := http.NewRequest("GET", e.FullURL+"/api/1.0/clients?limit=1", nil)
		req.Host = host
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for range 3 {
		if c, err := status(); err != nil || c != 200 {
			return 0, fmt.Errorf("fresh token: %d %v", c, err)
		}
	}
	code, body, _, err := e.do("POST", "/api/oauth/revoke", url.Values{"token": {tok}, "client_id": {e.clientID}, "client_secret": {e.secret}})
	if err != nil || code != 200 {
		return 0, fmt.Errorf("revoke: %d %v %.300s", code, err, body)
	}
	t0 := time.Now()
	for time.Since(t0) < 2*time.Second {
		c, err := status()
		if err != nil {
			return 0, err
		}
		if c == http.StatusUnauthorized {
			return time.Since(t0), nil
		}
		time.Sleep(time.Millisecond)
	}
	return 0, errors.New("revoked token still accepted after 2s")
}

// api sends an authenticated JSON request to the full server.
func (e *env) api(method, path string, in, out any, want int) error {
	req, err := e.request(method, path, in)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d, want %d: %.500s", method, path, resp.StatusCode, want, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// request builds an authenticated request to the full server; in is JSON
// encoded unless it is already []byte.
func (e *env) request(method, path string, in any) (*http.Request, error) {
	var body io.Reader
	if in != nil {
		b, ok := in.([]byte)
		if !ok {
			var err error
			if b, err = json.Marshal(in); err != nil {
				return nil, err
			}
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.FullURL+path, body)
	if err != nil {
		return nil, err
	}
	req.Host = host
	req.Header.Set("Authorization", "Bearer "+e.Token)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// seedClients creates n clients through the API and returns their ids.
func (e *env) seedClients(n int) ([]int64, error) {
	ids := make([]int64, 0, n)
	for i := range n {
		var c struct {
			ID int64 `json:"id"`
		}
		err := e.api("POST", "/api/1.0/clients", map[string]any{
			"company_name": fmt.Sprintf("Bench Client %04d AB", i), "org_number": fmt.Sprintf("556%07d", i),
			"country": "SE", "credit_limit": 250000.50,
		}, &c, http.StatusCreated)
		if err != nil {
			return nil, err
		}
		ids = append(ids, c.ID)
	}
	return ids, nil
}

// bulkTarget is one act with an open fetch request for its 50 external
// fields, ready for one correlated bulk PUT.
type bulkTarget struct {
	ActUUID string
	Body    []byte
}

// seedBulk prepares n bulk PUT targets: a template of fields external
// fields, an eligible act.fetch_data registration, and per target an act
// and a fetch request for every field.
func (e *env) seedBulk(ctx context.Context, clientID int64, n, fields int) ([]bulkTarget, error) {
	var tmplFields []map[string]any
	for i := range fields {
		tmplFields = append(tmplFields, map[string]any{"key": fmt.Sprintf("f%02d", i), "name": fmt.Sprintf("Field %d", i),
			"type": "text", "source": "external_data"})
	}
	var tmpl struct {
		ID int64 `json:"id"`
	}
	if err := e.api("POST", "/api/1.0/templates", map[string]any{"name": "Bench template", "fields": tmplFields}, &tmpl, http.StatusCreated); err != nil {
		return nil, err
	}
	// The registration that makes the external fields fetchable (the
	// webhooks API is another capability; the row is what it would write).
	// No worker runs here, so deliveries stay pending. A registration the
	// caller made already (the scale benchmark's loopback receiver, id 1)
	// is kept.
	var adminID int64
	if err := e.DB.WithContext(ctx).Raw("SELECT id FROM users WHERE tenant_id = ? AND email = ?", e.Tenant.ID, email).Scan(&adminID).Error; err != nil {
		return nil, err
	}
	if err := e.DB.WithContext(ctx).Exec(`INSERT INTO webhooks (tenant_id, id, event, target, secret_ciphertext, created_by_user_id)
		VALUES (?, 1, 'act.fetch_data', 'https://127.0.0.1:9/hook', 'unused', ?)
		ON CONFLICT (tenant_id, id) DO NOTHING`, e.Tenant.ID, adminID).Error; err != nil {
		return nil, fmt.Errorf("register webhook: %w", err)
	}
	out := make([]bulkTarget, 0, n)
	for i := range n {
		var act struct {
			UUID string `json:"uuid"`
			Data []struct {
				ID  int64  `json:"id"`
				Key string `json:"template_field_key"`
			} `json:"data"`
		}
		if err := e.api("POST", "/api/1.0/acts", map[string]any{"client_id": clientID, "template_id": tmpl.ID, "title": fmt.Sprintf("Bench act %d", i)}, &act, http.StatusCreated); err != nil {
			return nil, err
		}
		ids := make([]int64, 0, len(act.Data))
		for _, dp := range act.Data {
			ids = append(ids, dp.ID)
		}
		var fr struct {
			ID string `json:"id"`
		}
		if err := e.api("POST", "/api/1.0/acts/"+act.UUID+"/fetch-requests", map[string]any{"data_point_ids": ids}, &fr, http.StatusCreated); err != nil {
			return nil, err
		}
		items := make([]map[string]any, 0, len(act.Data))
		for j, dp := range act.Data {
			items = append(items, map[string]any{"template_field_key": dp.Key, "value": fmt.Sprintf("value %d of act %d", j, i)})
		}
		body, err := json.Marshal(map[string]any{"fetch_request_id": fr.ID, "data": items})
		if err != nil {
			return nil, err
		}
		out = append(out, bulkTarget{ActUUID: act.UUID, Body: body})
	}
	if len(out) == 0 {
		return nil, errors.New("no bulk targets")
	}
	return out, nil
}

// openFresh creates a fresh database next to databaseURL, opens and
// migrates it, and returns it with its URL and a func that closes and drops
// it.
func openFresh(ctx context.Context, databaseURL string) (d *db.DB, url string, done func(), err error) {
	url, drop, err := freshDatabase(ctx, databaseURL)
	if err != nil {
		return nil, "", nil, err
	}
	d, err = db.Open(ctx, url, "", nil)
	if err != nil {
		drop()
		return nil, "", nil, err
	}
	if err := d.Migrate(ctx); err != nil {
		d.Close()
		drop()
		return nil, "", nil, err
	}
	return d, url, func() { d.Close(); drop() }, nil
}

// serveFresh is how the benchmark, the soak and the scale run begin: a
// fresh database, both servers over it (start) and the OAuth flow done.
// Close stops the servers, then drops the database.
func serveFresh(ctx context.Context, databaseURL string, tokenCache, deliveries bool) (*env, error) {
	d, url, done, err := openFresh(ctx, databaseURL)
	if err != nil {
		return nil, err
	}
	e, err := start(ctx, d, url, tokenCache, deliveries, io.Discard)
	if err != nil {
		done()
		return nil, err
	}
	e.stop = append([]func(){done}, e.stop...)
	if err := e.login(ctx); err != nil {
		e.Close()
		return nil, fmt.Errorf("oauth flow: %w", err)
	}
	return e, nil
}
