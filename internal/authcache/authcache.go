// Package authcache puts a short-lived cache in front of the bearer token
// check, so that a request through /api/1.0 costs one database round trip
// (its own query) instead of two (token lookup + query).
//
// Revocation stays correct: PostgreSQL notifies every replica on channel
// Channel whenever an access token that may still be cached is updated or
// deleted, a user's role changes or a user is deleted (migrations 00050
// and 00220), and the cache drops everything it holds. The cache never
// serves a token past its expiry, so a change to a token that expired
// over a minute ago (the minute is for clocks) notifies nobody. The cache
// serves entries only while its listener is connected; while it is not
// (startup, lost connection, SQLite), every check goes to the database.
// Two further bounds hold regardless: an entry lives at most TTL, and an
// answer read before an invalidation is never stored after it (a
// generation counter), so a check racing a revocation cannot resurrect the
// revoked token.
//
// Only successful checks are cached, under SHA-256(tenant id, token): the
// raw token is never kept.
package authcache

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/tenant"
)

// Channel is the PostgreSQL notification channel of migrations 00050 and 00220.
const Channel = "finsvc_auth_changed"

// ApplicationName names the listener's connection in pg_stat_activity.
const ApplicationName = "finsvc-authcache"

// Authenticator is httpapi.Authenticator (not imported, to keep this
// package below httpapi).
type Authenticator interface {
	AuthenticateBearer(ctx context.Context, token string) (*auth.Principal, error)
}

type entry struct {
	p   auth.Principal
	exp time.Time
}

// Cache is an Authenticator that remembers inner's successful answers.
type Cache struct {
	inner Authenticator
	ttl   time.Duration
	max   int
	now   func() time.Time

	live atomic.Bool // serving from the cache is allowed

	mu  sync.RWMutex
	gen uint64 // bumped by every invalidation
	m   map[[32]byte]entry
}

// New returns a cache in front of inner. Entries live at most ttl; the
// cache holds at most max entries (and starts over when full). It serves
// nothing until SetLive(true) (ListenPostgres does that).
func New(inner Authenticator, ttl time.Duration, max int) *Cache {
	return &Cache{inner: inner, ttl: ttl, max: max, now: time.Now, m: map[[32]byte]entry{}}
}

func key(tenantID int64, token string) [32]byte {
	h := sha256.New()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(tenantID))
	h.Write(b[:])
	h.Write([]byte(token))
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// AuthenticateBearer implements Authenticator.
func (c *Cache) AuthenticateBearer(ctx context.Context, token string) (*auth.Principal, error) {
	t, ok := tenant.FromContext(ctx)
	if !ok || !c.live.Load() {
		return c.inner.AuthenticateBearer(ctx, token)
	}
	k := key(t.ID, token)
	now := c.now()
	c.mu.RLock()
	e, hit := c.m[k]
	gen := c.gen
	c.mu.RUnlock()
	if hit && now.Before(e.exp) {
		p := e.p
		p.Scopes = append([]string(nil), e.p.Scopes...) // callers own their copy
		return &p, nil
	}
	p, err := c.inner.AuthenticateBearer(ctx, token)
	if err != nil || p == nil {
		return p, err
	}
	c.mu.Lock()
	// Store only if nothing was invalidated since the lookup began: the
	// answer may predate a revocation.
	if c.gen == gen && c.live.Load() {
		if len(c.m) >= c.max {
			clear(c.m)
		}
		stored := *p
		stored.Scopes = append([]string(nil), p.Scopes...)
		// Never past the token's own expiry: a cached answer must not keep
		// an expired token alive.
		exp := now.Add(c.ttl)
		if !p.ExpiresAt.IsZero() && p.ExpiresAt.Before(exp) {
			exp = p.ExpiresAt
		}
		c.m[k] = entry{p: stored, exp: exp}
	}
	c.mu.Unlock()
	return p, nil
}

// Invalidate drops every entry.
func (c *Cache) Invalidate() {
	c.mu.Lock()
	c.gen++
	clear(c.m)
	c.mu.Unlock()
}

// SetLive allows (or stops) serving from the cache; either way it starts
// empty, since notifications may have been missed.
func (c *Cache) SetLive(v bool) {
	c.live.Store(v)
	c.Invalidate()
}

// Len is the number of entries (tests, metrics).
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// healthEvery bounds how long a silently dead listener connection (no FIN,
// a partition) goes unnoticed: after this long without a notification the
// listener pings the server.
var healthEvery = 5 * time.Second

// ListenPostgres keeps a LISTEN connection to dsn and invalidates the cache
// on every notification, until ctx ends. The cache is live only while the
// connection is up; on failure it reconnects with backoff. Run it in its
// own goroutine.
func (c *Cache) ListenPostgres(ctx context.Context, dsn string, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	backoff := minReconnect
	for ctx.Err() == nil {
		wasLive, err := c.listenOnce(ctx, dsn)
		c.SetLive(false)
		if ctx.Err() != nil {
			return
		}
		if wasLive {
			// A connection that was up ended: the next outage starts
			// over at the shortest delay (a failover after earlier ones
			// must not leave the cache off for the longest).
			backoff = minReconnect
		}
		log.Warn("token cache listener lost; bearer checks go to the database until it reconnects", "error", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxReconnect)
	}
}

// The listener's reconnect delays: doubled after each failed attempt,
// from minReconnect again once a connection was up.
const (
	minReconnect = 500 * time.Millisecond
	maxReconnect = 30 * time.Second
)

// listenOnce listens on one connection until it fails, and reports whether
// it was up (LISTEN done, the cache live).
func (c *Cache) listenOnce(ctx context.Context, dsn string) (live bool, _ error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return false, err
	}
	cfg.RuntimeParams["application_name"] = ApplicationName
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.ConnectConfig(cctx, cfg)
	cancel()
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		return false, err
	}
	c.SetLive(true) // empty: anything cached before is suspect
	live = true
	for {
		wctx, cancel := context.WithTimeout(ctx, healthEvery)
		_, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			c.Invalidate()
		case ctx.Err() != nil:
			return live, ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return live, err
			}
		default:
			return live, err
		}
	}
}
