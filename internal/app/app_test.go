package app_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/authcache"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/httpapi"
	"github.com/finsvc/finsvc/internal/testdb"
)

// countingAuth counts the checks that reach the real authenticator.
type countingAuth struct {
	next  httpapi.Authenticator
	calls atomic.Int64
}

func (c *countingAuth) AuthenticateBearer(ctx context.Context, tok string) (*auth.Principal, error) {
	c.calls.Add(1)
	return c.next.AuthenticateBearer(ctx, tok)
}

// On PostgreSQL with a database URL, the App checks tokens through the
// cache: it serves repeated checks, and a role change (a trigger
// notification) sends the next check back to the database; /metrics and
// /docs answer; the limiter is in the chain. Close ends the LISTEN
// connection.
func TestAppPostgres(t *testing.T) {
	d := testdb.Postgres(t)
	pooled, direct := testdb.URLs(t, d)
	var name string
	if err := d.Raw("SELECT current_database()").Scan(&name).Error; err != nil {
		t.Fatal(err)
	}

	tokens := apitest.NewTokens()
	counter := &countingAuth{next: tokens}
	env := apitest.New(t, apitest.WithDB(d), apitest.WithTokens(tokens),
		apitest.WithConfig(func(c *config.Config) {
			c.DatabaseURL, c.DatabaseDirectURL = pooled, direct
			c.RateLimitRPS, c.RateLimitBurst = 1000, 1000
		}),
		apitest.WithApp(app.WithAuthenticator(counter)))
	if err := env.App.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	acme := env.Tenant("acme")
	uid := acme.User(auth.RoleAdmin)
	tok := acme.Token(uid, auth.AllScopes...)

	get := func() *apitest.Response {
		t.Helper()
		return acme.Do("GET", "/api/1.0/clients", tok, nil).Status(t, http.StatusOK)
	}
	// Wait for the cache's listener, observed as a check served without
	// reaching the authenticator. Generous: on a loaded CI machine the
	// listener's connection and the janitor's first purge (a notification)
	// can take seconds.
	deadline := time.Now().Add(30 * time.Second)
	for {
		before := counter.calls.Load()
		get()
		get()
		if counter.calls.Load()-before < 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the token cache never served a check")
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := counter.calls.Load()
	r := get()
	if counter.calls.Load() != before {
		t.Fatal("a cached token reached the authenticator")
	}
	if r.Header.Get("RateLimit-Limit") != "1000" {
		t.Fatalf("RateLimit-Limit = %q; the limiter is not wired", r.Header.Get("RateLimit-Limit"))
	}
	if err := d.Exec(`UPDATE users SET role = 'viewer' WHERE tenant_id = ? AND id = ?`, acme.Tenant.ID, uid).Error; err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(15 * time.Second)
	for {
		before := counter.calls.Load()
		get()
		if counter.calls.Load() > before {
			break // the notification emptied the cache
		}
		if time.Now().After(deadline) {
			t.Fatal("a role change did not invalidate the token cache")
		}
		time.Sleep(5 * time.Millisecond)
	}

	m := env.Do("x", "GET", "/metrics", "", nil).Status(t, http.StatusOK)
	if !strings.Contains(string(m.Body), `finsvc_token_checks_total{outcome="valid"}`) ||
		!strings.Contains(string(m.Body), `route="/api/1.0/clients"`) {
		t.Fatalf("/metrics lacks token checks or request latency:\n%.2000s", m.Body)
	}
	env.Do("x", "GET", "/docs", "", nil).Status(t, http.StatusOK)

	listeners := func() (n int64) {
		t.Helper()
		if err := d.Raw("SELECT count(*) FROM pg_stat_activity WHERE datname = ? AND application_name = ?", name, authcache.ApplicationName).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := listeners(); n != 1 {
		t.Fatalf("%d token cache listeners before Close, want 1", n)
	}
	if err := env.App.Close(); err != nil {
		t.Fatal(err)
	}
	if err := env.App.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// The backend may take a moment to leave pg_stat_activity after the
	// client closed the connection.
	deadline = time.Now().Add(5 * time.Second)
	for listeners() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the LISTEN connection outlived Close")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := d.Ping(context.Background()); err != nil {
		t.Fatalf("Close closed a database it did not open: %v", err)
	}
}

// On SQLite there is no listener: every check reaches the authenticator.
func TestAppSQLiteNoCache(t *testing.T) {
	tokens := apitest.NewTokens()
	counter := &countingAuth{next: tokens}
	env := apitest.New(t, apitest.WithTokens(tokens), apitest.WithApp(app.WithAuthenticator(counter)))
	if err := env.App.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	acme := env.Tenant("acme")
	tok := acme.AdminToken()
	for range 5 {
		acme.Do("GET", "/api/1.0/clients", tok, nil).Status(t, http.StatusOK)
	}
	if counter.calls.Load() != 5 {
		t.Fatalf("%d checks reached the authenticator, want 5", counter.calls.Load())
	}
}

// Without WithDB the App opens (and migrates) cfg's database and Close
// closes it; Start runs once; Close is safe twice.
func TestAppOwnsWhatItOpens(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.RateLimitRPS = 0
	a, err := app.New(cfg, app.WithLogger(testdb.Logger()))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Secret == "" {
		t.Fatal("New did not resolve the global secret")
	}
	ctx := context.Background()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err == nil {
		t.Fatal("a second Start was accepted")
	}
	if err := a.DB().Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := a.DB().Ping(ctx); err == nil {
		t.Fatal("the database New opened is still open after Close")
	}
}

// Without a usable global secret, webhook secrets and OAuth tokens could
// only fail per request; New refuses instead.
func TestNewRefusesBadSecret(t *testing.T) {
	cfg := config.Default()
	cfg.Secret = "short"
	_, err := app.New(cfg, app.WithDB(testdb.SQLite(t)), app.WithLogger(testdb.Logger()))
	if err == nil || !strings.Contains(err.Error(), "FINSVC_SECRET") {
		t.Fatalf("New with a short secret: %v, want an error naming FINSVC_SECRET", err)
	}
}
