package ops_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/finsvc/finsvc/pkg/apitest"
	"github.com/finsvc/finsvc/pkg/auth"
	"github.com/finsvc/finsvc/pkg/config"
	"github.com/finsvc/finsvc/pkg/httpapi"
	"github.com/finsvc/finsvc/pkg/ops"
	"github.com/finsvc/finsvc/pkg/testdb"
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

// Wire on PostgreSQL: the token cache serves repeated checks, and a role
// change (a trigger notification) sends the next check back to the
// database; /metrics and /docs answer; the limiter is in the chain.
func TestWirePostgres(t *testing.T) {
	d := testdb.Postgres(t)
	var name string
	if err := d.Raw("SELECT current_database()").Scan(&name).Error; err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(os.Getenv(testdb.EnvDatabaseURL))
	u.Path = "/" + name

	var counter *countingAuth
	var closeOps func() error
	env := apitest.New(t, apitest.WithDB(d),
		apitest.WithConfig(func(c *config.Config) {
			c.DatabaseURL = u.String()
			c.RateLimitRPS, c.RateLimitBurst = 1000, 1000
		}),
		apitest.WithDeps(func(deps *httpapi.Deps) {
			counter = &countingAuth{next: deps.Auth}
			deps.Auth = counter
			var err error
			if _, closeOps, err = ops.Wire(deps); err != nil {
				t.Fatal(err)
			}
		}))
	t.Cleanup(func() { closeOps() })
	acme := env.Tenant("acme")
	uid := acme.User(auth.RoleAdmin)
	tok := acme.Token(uid, auth.AllScopes...)

	get := func() *apitest.Response {
		t.Helper()
		return acme.Do("GET", "/api/1.0/clients", tok, nil).Status(t, http.StatusOK)
	}
	// Wait for the cache's listener, observed as a check served without
	// reaching the authenticator.
	deadline := time.Now().Add(10 * time.Second)
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
	deadline = time.Now().Add(5 * time.Second)
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
}

// On SQLite there is no listener: every check reaches the authenticator.
func TestWireSQLiteNoCache(t *testing.T) {
	var counter *countingAuth
	env := apitest.New(t, apitest.WithDeps(func(deps *httpapi.Deps) {
		counter = &countingAuth{next: deps.Auth}
		deps.Auth = counter
		_, closeOps, err := ops.Wire(deps)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeOps() })
	}))
	acme := env.Tenant("acme")
	tok := acme.AdminToken()
	for range 5 {
		acme.Do("GET", "/api/1.0/clients", tok, nil).Status(t, http.StatusOK)
	}
	if counter.calls.Load() != 5 {
		t.Fatalf("%d checks reached the authenticator, want 5", counter.calls.Load())
	}
}
