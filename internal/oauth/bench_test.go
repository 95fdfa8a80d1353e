package oauth_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/authspec"
	"github.com/finsvc/finsvc/internal/oauth"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/users"
)

// TestBearerIsOneQuery: the bearer check is one database round trip.
func TestBearerIsOneQuery(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		o := s.org(t, "acme", "admin")
		access, refresh := o.tokens(t)
		// Count statements at the GORM level: prepared statements bypass
		// db.CountQueries' pool wrapper.
		var n atomic.Int64
		count := func() int { return int(n.Load()) }
		inc := func(*gorm.DB) { n.Add(1) }
		if err := s.DB.Callback().Query().After("gorm:query").Register("test:count_query", inc); err != nil {
			t.Fatal(err)
		}
		if err := s.DB.Callback().Raw().After("gorm:raw").Register("test:count_raw", inc); err != nil {
			t.Fatal(err)
		}
		pol, err := authspec.Load()
		if err != nil {
			t.Fatal(err)
		}
		svc, err := oauth.New(s.DB, s.Config, nil, users.NewStore(s.DB, users.WithHashParams(apitest.HashParams)), oauth.WithPolicy(pol))
		if err != nil {
			t.Fatal(err)
		}
		ctx := tenant.NewContext(context.Background(), o.Tenant)
		for range 3 {
			if _, err := svc.AuthenticateBearer(ctx, access); err != nil {
				t.Fatal(err)
			}
		}
		if n := count(); n != 3 {
			t.Fatalf("3 bearer checks ran %d queries, want 3", n)
		}
		// A refresh token or a forged token is refused without any query.
		_, _ = svc.AuthenticateBearer(ctx, refresh)
		_, _ = svc.AuthenticateBearer(ctx, access[:len(access)-3]+"abc")
		if n := count(); n != 3 {
			t.Fatalf("refused tokens ran %d queries, want 0", n-3)
		}
	})
}

func benchDialects(b *testing.B, fn func(b *testing.B, s *server)) {
	for _, dialect := range testdb.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			// Production's tenant resolver (tenants kept in memory), as a
			// deployment runs it; the harness's default reads the tenant
			// on every request.
			d := testdb.Open(b, dialect)
			fn(b, newServer(b, serverOpt{opts: []apitest.Option{apitest.WithDB(d), apitest.WithApp(app.WithTenants(tenant.NewStore(d)))}}))
		})
	}
}

// BenchmarkAuthenticateBearer: the per-request cost of the bearer check
// (HMAC verification plus one primary-key lookup joined with users).
func BenchmarkAuthenticateBearer(b *testing.B) {
	benchDialects(b, func(b *testing.B, s *server) {
		o := s.org(b, "acme", "admin")
		access, _ := o.tokens(b)
		ctx := tenant.NewContext(context.Background(), o.Tenant)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.svc.AuthenticateBearer(ctx, access); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRefreshGrant: one refresh_token grant over HTTP (client
// authentication with the SHA-256 secret hash, rotation in one
// transaction), each iteration using the token the previous one returned.
func BenchmarkRefreshGrant(b *testing.B) {
	benchDialects(b, func(b *testing.B, s *server) {
		o := s.org(b, "acme", "admin")
		_, refresh := o.tokens(b)
		hc := &http.Client{}
		b.ReportAllocs()
		for b.Loop() {
			form := o.refreshGrant(refresh)
			req, _ := http.NewRequest("POST", o.Server.URL+"/api/oauth/token", strings.NewReader(form.Encode()))
			req.Host = o.Host
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var tr struct {
				RefreshToken string `json:"refresh_token"`
			}
			if resp.StatusCode != 200 || json.Unmarshal(body, &tr) != nil {
				b.Fatalf("refresh: %d %s", resp.StatusCode, body)
			}
			refresh = tr.RefreshToken
		}
	})
}

// refreshClients is how many clients BenchmarkRefreshGrantParallel runs at
// once: 16, the concurrency the refresh grant is sized for, and the chains
// of its floor (internal/oauth/store, BenchmarkRefreshStatements).
const refreshClients = 16

// BenchmarkRefreshGrantParallel: refreshClients clients refreshing at once,
// each on its own refresh-token chain (one grant per client, so rotation
// never contends on a row), over HTTP with keep-alive connections. The
// refreshes/s metric is the figure to compare (BENCHMARKS.md).
func BenchmarkRefreshGrantParallel(b *testing.B) {
	benchDialects(b, func(b *testing.B, s *server) {
		o := s.org(b, "acme", "admin")
		// RunParallel starts parallelism × GOMAXPROCS goroutines.
		par := (refreshClients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0)
		n := par * runtime.GOMAXPROCS(0)
		chains := make(chan string, n)
		for range n {
			_, refresh := o.tokens(b)
			chains <- refresh
		}
		hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}}
		defer hc.CloseIdleConnections()
		b.SetParallelism(par)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			refresh := <-chains
			defer func() { chains <- refresh }()
			for pb.Next() {
				form := o.refreshGrant(refresh)
				req, _ := http.NewRequest("POST", o.Server.URL+"/api/oauth/token", strings.NewReader(form.Encode()))
				req.Host = o.Host
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				resp, err := hc.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var tr struct {
					RefreshToken string `json:"refresh_token"`
				}
				if resp.StatusCode != 200 || json.Unmarshal(body, &tr) != nil {
					b.Errorf("refresh: %d %s", resp.StatusCode, body)
					return
				}
				refresh = tr.RefreshToken
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "refreshes/s")
	})
}
