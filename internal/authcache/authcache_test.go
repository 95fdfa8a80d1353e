package authcache

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
)

// fakeAuth accepts tokens in valid (per tenant) and counts calls; block,
// when set, is waited on before answering.
type fakeAuth struct {
	mu      sync.Mutex
	valid   map[string]bool // "tenantID/token"
	calls   atomic.Int64
	block   chan struct{}
	expires time.Time // the principal's ExpiresAt
}

func (f *fakeAuth) set(tenantID int64, tok string, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.valid[key2(tenantID, tok)] = ok
}

func key2(tid int64, tok string) string { return string(rune(tid)) + "/" + tok }

func (f *fakeAuth) AuthenticateBearer(ctx context.Context, tok string) (*auth.Principal, error) {
	f.calls.Add(1)
	tid := tenant.ID(ctx)
	f.mu.Lock()
	ok := f.valid[key2(tid, tok)]
	f.mu.Unlock()
	if f.block != nil {
		<-f.block
	}
	if !ok {
		return nil, apperr.E(apperr.Unauthenticated, "invalid")
	}
	return &auth.Principal{TenantID: tid, UserID: 7, Role: auth.RoleAdmin, Scopes: []string{"clients:read"}, ExpiresAt: f.expires}, nil
}

func ctxFor(id int64) context.Context {
	return tenant.NewContext(context.Background(), &tenant.Tenant{ID: id, Slug: "t"})
}

func TestCacheHitsMissesAndBounds(t *testing.T) {
	f := &fakeAuth{valid: map[string]bool{}}
	f.set(1, "tok", true)
	c := New(f, 10*time.Second, 100)
	now := time.Unix(1_700_000_000, 0)
	c.now = func() time.Time { return now }

	// Not live: every check goes through.
	for range 3 {
		if _, err := c.AuthenticateBearer(ctxFor(1), "tok"); err != nil {
			t.Fatal(err)
		}
	}
	if f.calls.Load() != 3 || c.Len() != 0 {
		t.Fatalf("not live: %d inner calls, %d entries; want 3 and 0", f.calls.Load(), c.Len())
	}
	c.SetLive(true)
	f.calls.Store(0)
	for range 5 {
		p, err := c.AuthenticateBearer(ctxFor(1), "tok")
		if err != nil || p.UserID != 7 || p.TenantID != 1 {
			t.Fatalf("%v %v", p, err)
		}
		p.Scopes[0] = "mutated" // a caller's change must not reach the cache
	}
	if f.calls.Load() != 1 {
		t.Fatalf("live: %d inner calls for 5 checks, want 1", f.calls.Load())
	}
	if p, _ := c.AuthenticateBearer(ctxFor(1), "tok"); p.Scopes[0] != "clients:read" {
		t.Fatalf("cached principal was mutated through a returned copy: %v", p.Scopes)
	}
	// The same token in another tenant is a different question.
	if _, err := c.AuthenticateBearer(ctxFor(2), "tok"); !apperr.Is(err, apperr.Unauthenticated) {
		t.Fatalf("tenant 2: %v, want unauthenticated", err)
	}
	// Failures are never cached.
	f.calls.Store(0)
	for range 3 {
		c.AuthenticateBearer(ctxFor(1), "bad")
	}
	if f.calls.Load() != 3 {
		t.Fatalf("failures: %d inner calls, want 3 (not cached)", f.calls.Load())
	}
	// Entries expire after the ttl.
	f.set(1, "tok", false)
	now = now.Add(9 * time.Second)
	if _, err := c.AuthenticateBearer(ctxFor(1), "tok"); err != nil {
		t.Fatalf("within ttl: %v", err)
	}
	now = now.Add(time.Second)
	if _, err := c.AuthenticateBearer(ctxFor(1), "tok"); !apperr.Is(err, apperr.Unauthenticated) {
		t.Fatalf("after ttl: %v, want the inner answer (revoked)", err)
	}
	// Invalidate drops everything at once.
	f.set(1, "a", true)
	c.AuthenticateBearer(ctxFor(1), "a")
	f.set(1, "a", false)
	c.Invalidate()
	if _, err := c.AuthenticateBearer(ctxFor(1), "a"); err == nil {
		t.Fatal("served a revoked token after Invalidate")
	}
}

// A cached answer never outlives the token: an entry for a token expiring
// within the ttl ends at the token's expiry.
func TestCacheStopsAtTokenExpiry(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	f := &fakeAuth{valid: map[string]bool{}, expires: now.Add(3 * time.Second)}
	f.set(1, "tok", true)
	c := New(f, 10*time.Second, 100)
	c.now = func() time.Time { return now }
	c.SetLive(true)
	if _, err := c.AuthenticateBearer(ctxFor(1), "tok"); err != nil {
		t.Fatal(err)
	}
	f.set(1, "tok", false) // the inner check now refuses (expired)
	now = now.Add(2 * time.Second)
	if _, err := c.AuthenticateBearer(ctxFor(1), "tok"); err != nil {
		t.Fatalf("before expiry: %v", err)
	}
	now = now.Add(time.Second)
	if _, err := c.AuthenticateBearer(ctxFor(1), "tok"); !apperr.Is(err, apperr.Unauthenticated) {
		t.Fatalf("at the token's expiry (within the cache ttl): %v, want unauthenticated", err)
	}
}

func TestCacheBoundedSize(t *testing.T) {
	f := &fakeAuth{valid: map[string]bool{}}
	c := New(f, time.Minute, 10)
	c.SetLive(true)
	for i := range 25 {
		tok := string(rune('a' + i))
		f.set(1, tok, true)
		c.AuthenticateBearer(ctxFor(1), tok)
		if c.Len() > 10 {
			t.Fatalf("%d entries, max 10", c.Len())
		}
	}
}

// An answer read before an invalidation is not stored after it: a check
// racing a revocation cannot put the revoked token back in the cache.
func TestCacheCheckRacingRevocation(t *testing.T) {
	f := &fakeAuth{valid: map[string]bool{}, block: make(chan struct{})}
	f.set(1, "tok", true)
	c := New(f, time.Minute, 100)
	c.SetLive(true)
	done := make(chan error)
	go func() {
		_, err := c.AuthenticateBearer(ctxFor(1), "tok") // reads "valid", then blocks
		done <- err
	}()
	for f.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	f.set(1, "tok", false)
	c.Invalidate() // the revocation's notification arrives meanwhile
	close(f.block)
	if err := <-done; err != nil {
		t.Fatal(err) // that one check saw the token before the revocation
	}
	f.block = nil
	if c.Len() != 0 {
		t.Fatal("a pre-revocation answer was cached after the invalidation")
	}
	if _, err := c.AuthenticateBearer(ctxFor(1), "tok"); err == nil {
		t.Fatal("revoked token accepted")
	}
}

func TestCacheConcurrent(t *testing.T) {
	f := &fakeAuth{valid: map[string]bool{}}
	for i := range 8 {
		f.set(1, string(rune('a'+i)), true)
	}
	c := New(f, time.Minute, 4)
	c.SetLive(true)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if _, err := c.AuthenticateBearer(ctxFor(1), string(rune('a'+(w+i)%8))); err != nil {
					t.Error(err)
					return
				}
				if i%50 == 0 {
					c.Invalidate()
				}
			}
		}()
	}
	wg.Wait()
}

// pgDSN returns a URL for the database d is connected to.
func pgDSN(t *testing.T, d *db.DB) string {
	_, direct := testdb.URLs(t, d) // LISTEN needs a session
	return direct
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Against the real PostgreSQL triggers (migrations 00050 and 00220):
// revoking or deleting a live token, changing a role or deleting a user
// empties every listening cache, and changes that revoke nothing a cache
// may hold (an expired token's) notify nobody; a lost
// listener connection makes the cache stop serving until it reconnects.
func TestPostgresNotificationsInvalidate(t *testing.T) {
	d := testdb.Postgres(t)
	ctx, tn := testdb.NewTenant(t, d, "acme")
	if err := d.Exec(`INSERT INTO users (tenant_id, id, email, name, role, password_hash) VALUES (?, 1, 'a@x.io', 'A', 'admin', '!')`, tn.ID).Error; err != nil {
		t.Fatal(err)
	}
	orig := healthEvery
	healthEvery = 100 * time.Millisecond // exercise the idle ping path
	t.Cleanup(func() { healthEvery = orig })

	f := &fakeAuth{valid: map[string]bool{}}
	f.set(tn.ID, "tok", true)
	// Two caches: two replicas.
	caches := []*Cache{New(f, time.Minute, 100), New(f, time.Minute, 100)}
	lctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, c := range caches {
		wg.Add(1)
		go func() { defer wg.Done(); c.ListenPostgres(lctx, pgDSN(t, d), nil) }()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, c := range caches {
		waitFor(t, "listener", c.live.Load)
	}
	fill := func() {
		t.Helper()
		for _, c := range caches {
			if _, err := c.AuthenticateBearer(ctx, "tok"); err != nil {
				t.Fatal(err)
			}
			if c.Len() != 1 {
				t.Fatalf("cache holds %d entries, want 1", c.Len())
			}
		}
	}
	emptied := func() bool { return caches[0].Len() == 0 && caches[1].Len() == 0 }

	fill()
	time.Sleep(3 * healthEvery) // idle pings keep the listener (and entries)
	if caches[0].Len() != 1 || !caches[0].live.Load() {
		t.Fatal("idle listener dropped the cache")
	}
	// Tokens of two apps: live ones, one expired within the margin of
	// migration 00220, and long-expired ones.
	for _, q := range []string{
		`INSERT INTO oauth_clients (tenant_id, id, name, secret_hash, redirect_uris) VALUES (?, 'app', 'App', 'x', '[]'), (?, 'app2', 'App 2', 'x', '[]')`,
		`INSERT INTO oauth_access_tokens (tenant_id, signature, request_id, requested_at, client_id, user_id, expires_at) VALUES
			(?, 'live1', 'r1', now(), 'app', 1, now() + interval '1 hour'),
			(?, 'live2', 'r2', now(), 'app', 1, now() + interval '1 hour'),
			(?, 'live3', 'r3', now(), 'app2', 1, now() + interval '1 hour'),
			(?, 'recent', 'r4', now(), 'app', 1, now() - interval '30 seconds'),
			(?, 'old1', 'r5', now(), 'app', 1, now() - interval '2 minutes'),
			(?, 'old2', 'r6', now(), 'app', 1, now() - interval '1 hour'),
			(?, 'live4', 'r7', now(), 'app', 1, now() + interval '1 hour')`,
	} {
		args := make([]any, strings.Count(q, "(?"))
		for i := range args {
			args[i] = tn.ID
		}
		if err := d.Exec(q, args...).Error; err != nil {
			t.Fatal(err)
		}
	}
	// A listener of the test's own tells, in commit order, whether a
	// statement notified: its notification (empty payload) arrives before
	// the marker sent after it, or the marker comes first. (The marker
	// empties the caches too, as any notification on the channel does.)
	probe, err := pgx.Connect(ctx, pgDSN(t, d))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { probe.Close(context.Background()) })
	if _, err := probe.Exec(ctx, "LISTEN "+Channel); err != nil {
		t.Fatal(err)
	}
	notified := func(stmt string) bool {
		t.Helper()
		if err := d.Exec(stmt).Error; err != nil {
			t.Fatal(err)
		}
		if err := d.Exec(`SELECT pg_notify(?, 'marker')`, Channel).Error; err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		n, err := probe.WaitForNotification(wctx)
		if err != nil {
			t.Fatal(err)
		}
		if n.Payload == "marker" {
			return false
		}
		if m, err := probe.WaitForNotification(wctx); err != nil || m.Payload != "marker" {
			t.Fatalf("after %q: %v %v, want the marker", stmt, m, err)
		}
		return true
	}
	for _, stmt := range []string{
		`UPDATE oauth_access_tokens SET active = false WHERE signature = 'live1'`, // a revocation
		`DELETE FROM oauth_access_tokens WHERE signature = 'live2'`,
		`DELETE FROM oauth_access_tokens WHERE signature = 'recent'`, // expired, but within the clocks' margin
		`DELETE FROM oauth_clients WHERE id = 'app2'`,                // its live token goes with it
		`UPDATE users SET role = 'viewer' WHERE id = 1`,
		`DELETE FROM users WHERE tenant_id = 0`,
	} {
		fill()
		if !notified(stmt) {
			t.Fatalf("%s did not notify", stmt)
		}
		waitFor(t, "invalidation by "+stmt, emptied)
	}
	// Changes that revoke nothing a cache may hold notify nobody: a name,
	// tokens long past their expiry (a refresh after expiry, the purge), a
	// statement that changes no row.
	for _, stmt := range []string{
		`UPDATE users SET name = 'B' WHERE id = 1`,
		`UPDATE oauth_access_tokens SET active = false WHERE signature = 'old1'`,
		`DELETE FROM oauth_access_tokens WHERE signature IN ('old1', 'old2')`,
		`DELETE FROM oauth_access_tokens WHERE signature = 'none'`,
	} {
		if notified(stmt) {
			t.Fatalf("%s notified", stmt)
		}
	}
	// TRUNCATE has no rows to look at: it always notifies.
	fill()
	if !notified(`TRUNCATE oauth_access_tokens`) {
		t.Fatal("TRUNCATE did not notify")
	}
	waitFor(t, "invalidation by TRUNCATE", emptied)
	// Kill the listeners' connections: the caches stop serving, then come
	// back (empty) once reconnected. The caches are full first, so that
	// "emptied" can only mean a listener noticed (nothing notifies here):
	// waiting on a cache that was already empty, or on one still live on
	// its dead connection, raced the listener's own notice.
	fill()
	if err := d.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ? AND datname = current_database()`, ApplicationName).Error; err != nil {
		t.Fatal(err)
	}
	for i, c := range caches {
		waitFor(t, fmt.Sprintf("listener %d to notice", i), func() bool { return c.Len() == 0 })
	}
	for _, c := range caches {
		waitFor(t, "reconnect", c.live.Load)
	}
	fill()
}
