package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"runtime"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/ory/fosite"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
)

// floorClients is how many refresh chains BenchmarkRefreshStatements runs
// at once: the 16 clients of the refresh grant's own benchmark
// (internal/oauth, BenchmarkRefreshGrantParallel).
const floorClients = 16

// BenchmarkRefreshStatements is the refresh grant's floor on PostgreSQL:
// the grant's three statements (the read of app and token, the rotation,
// the durability wait), the same SQL with the same arguments, through a
// bare pgxpool with pgx's defaults: no HTTP, no fosite, no GORM, no
// database/sql. floorClients goroutines each rotate a chain of their own.
// The grant over HTTP cannot beat this figure on the same machine, so it
// says what a goal for the grant can ask of that machine.
//
// access_live refreshes while the access token being replaced is live, so
// that its deletion notifies every replica's token cache (migration
// 00220); access_expired refreshes after it expired, as a client that
// refreshes on expiry does, and notifies nobody.
//
//	go test -run '^$' -bench RefreshStatements -benchtime 3s ./internal/oauth/store
func BenchmarkRefreshStatements(b *testing.B) {
	b.Run("access_live", func(b *testing.B) { refreshStatements(b, time.Hour) })
	b.Run("access_expired", func(b *testing.B) { refreshStatements(b, -time.Hour) })
}

// refreshStatements runs the floor with access tokens that expire
// accessLife after they are issued.
func refreshStatements(b *testing.B, accessLife time.Duration) {
	d := testdb.Open(b, db.Postgres) // skips without PostgreSQL
	ctx, tn := testdb.NewTenant(b, d, "acme")
	if err := d.Table("users").Create(map[string]any{"tenant_id": tn.ID, "id": 1, "email": "u@acme.example.com",
		"name": "U", "role": "admin", "password_hash": "!"}).Error; err != nil {
		b.Fatal(err)
	}
	c := &Client{TenantID: tn.ID, ID: "app_floor", Name: "Floor", SecretHash: HashSecret("secret"),
		RedirectURIs: `["https://acme.example.com/cb"]`, Scopes: "clients:read acts:read"}
	if err := d.Create(c).Error; err != nil {
		b.Fatal(err)
	}
	st := New(d)
	newSig := func() string {
		var r [32]byte
		_, _ = rand.Read(r[:])
		return hex.EncodeToString(r[:])
	}
	req := func(id string) *fosite.Request {
		now := time.Now().UTC().Truncate(time.Second)
		return &fosite.Request{
			ID: id, RequestedAt: now, Client: c,
			RequestedScope: fosite.Arguments{"clients:read", "acts:read"}, GrantedScope: fosite.Arguments{"clients:read", "acts:read"},
			Form: url.Values{"grant_type": {"refresh_token"}},
			Session: &fosite.DefaultSession{Subject: "1", ExpiresAt: map[fosite.TokenType]time.Time{
				fosite.AccessToken: now.Add(accessLife), fosite.RefreshToken: now.Add(30 * 24 * time.Hour),
			}},
		}
	}
	type chain struct{ family, sig string }
	chains := make(chan chain, floorClients)
	for range floorClients {
		ch := chain{family: newSig(), sig: newSig()}
		at := newSig()
		if err := st.CreateAccessTokenSession(ctx, at, req(ch.family)); err != nil {
			b.Fatal(err)
		}
		if err := st.CreateRefreshTokenSession(ctx, ch.sig, at, req(ch.family)); err != nil {
			b.Fatal(err)
		}
		chains <- ch
	}

	pooled, _ := testdb.URLs(b, d)
	cfg, err := pgxpool.ParseConfig(pooled) // pgx's defaults: the statement cache on
	if err != nil {
		b.Fatal(err)
	}
	sqlDB, err := d.DB.DB()
	if err != nil {
		b.Fatal(err)
	}
	// As many server backends as the service may use.
	cfg.MaxConns = int32(sqlDB.Stats().MaxOpenConnections)
	pool, err := pgxpool.NewWithConfig(b.Context(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)

	readSQL, rotateSQL := refreshWithClient.PostgresText(), rotationQuery.PostgresText()
	step := func(ctx context.Context, family, cur string) (string, error) {
		// The read: app and token in one row, every column scanned.
		rows, err := pool.Query(ctx, readSQL, tn.ID, cur, tn.ID, c.ID)
		if err != nil {
			return "", err
		}
		for rows.Next() {
			if _, err := rows.Values(); err != nil {
				rows.Close()
				return "", err
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return "", err
		}
		// The rotation, with rows built as the grant builds them.
		r := req(family)
		at, rt := newSig(), newSig()
		access, err := requestRow(ctx, tableAccess, at, r, fosite.AccessToken, "")
		if err != nil {
			return "", err
		}
		refresh, err := requestRow(ctx, tableRefresh, rt, r, fosite.RefreshToken, at)
		if err != nil {
			return "", err
		}
		var rotated int64
		var async string
		if err := pool.QueryRow(ctx, rotateSQL, rotationArgs(ctx, &rotation{signature: cur, access: access, refresh: refresh})...).Scan(&rotated, &async); err != nil {
			return "", err
		}
		if rotated != 1 {
			b.Errorf("rotated %d rows of %s", rotated, cur)
		}
		// The durability wait.
		var xid int64
		if err := pool.QueryRow(ctx, db.DurableSQL).Scan(&xid); err != nil {
			return "", err
		}
		return rt, nil
	}

	par := (floorClients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0)
	b.SetParallelism(par)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ch := <-chains
		defer func() { chains <- ch }()
		for pb.Next() {
			next, err := step(ctx, ch.family, ch.sig)
			if err != nil {
				b.Error(err)
				return
			}
			ch.sig = next
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "refreshes/s")
}
