package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ory/fosite"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/oauth/store"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
)

// expiring is request() with every token kind expiring at exp.
func expiring(c *store.Client, id string, exp time.Time) *fosite.Request {
	r := request(c, id)
	r.RequestedAt = exp.Add(-time.Minute)
	r.Session.(*fosite.DefaultSession).ExpiresAt = map[fosite.TokenType]time.Time{
		fosite.AuthorizeCode: exp, fosite.AccessToken: exp, fosite.RefreshToken: exp,
	}
	return r
}

func exists(t *testing.T, d *db.DB, ctx context.Context, table, key, value string) bool {
	t.Helper()
	var n int64
	if err := tenant.Scope(ctx, d.Table(table)).Where(key+" = ?", value).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func addSession(t *testing.T, d *db.DB, tenantID int64, idHash string, exp time.Time) {
	t.Helper()
	if err := d.Table("web_sessions").Create(map[string]any{"tenant_id": tenantID, "id_hash": idHash, "user_id": 1,
		"expires_at": exp.UTC(), "created_at": exp.Add(-time.Hour).UTC()}).Error; err != nil {
		t.Fatal(err)
	}
}

// TestPurge: expired state goes, live state stays, used codes and rotated
// refresh tokens stay within the grace period, and a tenant's rows are
// judged by their own expiry only (tenant B holds live rows under the
// signatures of tenant A's dead ones).
func TestPurge(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		now := time.Now().UTC().Truncate(time.Second)
		const grace = 24 * time.Hour
		live, dead, recent, old := now.Add(10*time.Minute), now.Add(-time.Second), now.Add(-time.Hour), now.Add(-grace-time.Minute)
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		a, b := f.a, f.b
		ca, cb := f.ca, f.cb
		tidA, tidB := ca.TenantID, cb.TenantID

		// Codes.
		must(f.st.CreateAuthorizeCodeSession(a, "c-live", expiring(ca, "r1", live)))
		must(f.st.CreateAuthorizeCodeSession(a, "c-dead", expiring(ca, "r2", dead)))
		must(f.st.CreateAuthorizeCodeSession(a, "c-used-recent", expiring(ca, "r3", recent)))
		must(f.st.InvalidateAuthorizeCodeSession(a, "c-used-recent"))
		must(f.st.CreateAuthorizeCodeSession(a, "c-used-old", expiring(ca, "r4", old)))
		must(f.st.InvalidateAuthorizeCodeSession(a, "c-used-old"))
		// PKCE.
		must(f.st.CreatePKCERequestSession(a, "p-live", expiring(ca, "r1", live)))
		must(f.st.CreatePKCERequestSession(a, "p-dead", expiring(ca, "r2", dead)))
		// Access tokens.
		must(f.st.CreateAccessTokenSession(a, "a-live", expiring(ca, "r5", live)))
		must(f.st.CreateAccessTokenSession(a, "a-dead", expiring(ca, "r6", dead)))
		// Refresh tokens.
		must(f.st.CreateRefreshTokenSession(a, "rt-live", "", expiring(ca, "r7", live)))
		must(f.st.CreateRefreshTokenSession(a, "rt-dead", "", expiring(ca, "r8", dead)))
		must(f.st.CreateRefreshTokenSession(a, "rt-rotated-live", "", expiring(ca, "r9", live)))
		must(f.st.RotateRefreshToken(a, "r9", "rt-rotated-live"))
		must(f.st.CreateRefreshTokenSession(a, "rt-rotated-recent", "", expiring(ca, "r10", recent)))
		must(f.st.RotateRefreshToken(a, "r10", "rt-rotated-recent"))
		must(f.st.CreateRefreshTokenSession(a, "rt-rotated-old", "", expiring(ca, "r11", old)))
		must(f.st.RotateRefreshToken(a, "r11", "rt-rotated-old"))
		// Sessions.
		addSession(t, d, tidA, "s-live", live)
		addSession(t, d, tidA, "s-dead", dead)

		// Tenant B: live rows under tenant A's dead signatures.
		must(f.st.CreateAuthorizeCodeSession(b, "c-dead", expiring(cb, "r2", live)))
		must(f.st.CreateAuthorizeCodeSession(b, "c-used-old", expiring(cb, "r4", live)))
		must(f.st.InvalidateAuthorizeCodeSession(b, "c-used-old"))
		must(f.st.CreatePKCERequestSession(b, "p-dead", expiring(cb, "r2", live)))
		must(f.st.CreateAccessTokenSession(b, "a-dead", expiring(cb, "r6", live)))
		must(f.st.CreateRefreshTokenSession(b, "rt-dead", "", expiring(cb, "r8", live)))
		must(f.st.CreateRefreshTokenSession(b, "rt-rotated-old", "", expiring(cb, "r11", recent)))
		must(f.st.RotateRefreshToken(b, "r11", "rt-rotated-old"))
		addSession(t, d, tidB, "s-dead", live)
		// And one dead row of its own.
		addSession(t, d, tidB, "s-b-dead", dead)

		st, err := f.st.Purge(context.Background(), store.PurgePolicy{Now: now, Grace: grace, Batch: 1})
		must(err)
		want := store.PurgeStats{Codes: 2, PKCE: 1, AccessTokens: 1, RefreshTokens: 2, Sessions: 2}
		if st != want {
			t.Fatalf("purged %+v, want %+v", st, want)
		}

		type row struct {
			ctx               context.Context
			table, key, value string
			kept              bool
		}
		rows := []row{
			{a, "oauth_codes", "signature", "c-live", true},
			{a, "oauth_codes", "signature", "c-dead", false},
			{a, "oauth_codes", "signature", "c-used-recent", true},
			{a, "oauth_codes", "signature", "c-used-old", false},
			{a, "oauth_pkce", "signature", "p-live", true},
			{a, "oauth_pkce", "signature", "p-dead", false},
			{a, "oauth_access_tokens", "signature", "a-live", true},
			{a, "oauth_access_tokens", "signature", "a-dead", false},
			{a, "oauth_refresh_tokens", "signature", "rt-live", true},
			{a, "oauth_refresh_tokens", "signature", "rt-dead", false},
			{a, "oauth_refresh_tokens", "signature", "rt-rotated-live", true},
			{a, "oauth_refresh_tokens", "signature", "rt-rotated-recent", true},
			{a, "oauth_refresh_tokens", "signature", "rt-rotated-old", false},
			{a, "web_sessions", "id_hash", "s-live", true},
			{a, "web_sessions", "id_hash", "s-dead", false},
			{b, "oauth_codes", "signature", "c-dead", true},
			{b, "oauth_codes", "signature", "c-used-old", true},
			{b, "oauth_pkce", "signature", "p-dead", true},
			{b, "oauth_access_tokens", "signature", "a-dead", true},
			{b, "oauth_refresh_tokens", "signature", "rt-dead", true},
			{b, "oauth_refresh_tokens", "signature", "rt-rotated-old", true},
			{b, "web_sessions", "id_hash", "s-dead", true},
			{b, "web_sessions", "id_hash", "s-b-dead", false},
		}
		for _, r := range rows {
			who := "A"
			if r.ctx == b {
				who = "B"
			}
			if got := exists(t, d, r.ctx, r.table, r.key, r.value); got != r.kept {
				t.Errorf("tenant %s %s %s: exists=%v, want %v", who, r.table, r.value, got, r.kept)
			}
		}

		// A rotated refresh token kept within the grace period still
		// reports reuse (ErrInactiveToken with its request, so fosite can
		// revoke the family).
		req, err := f.st.GetRefreshTokenSession(a, "rt-rotated-recent", nil)
		if !errors.Is(err, fosite.ErrInactiveToken) || req == nil || req.GetID() != "r10" {
			t.Fatalf("rotated token after purge: %v %v", req, err)
		}
		// Nothing is left to purge.
		st, err = f.st.Purge(context.Background(), store.PurgePolicy{Now: now, Grace: grace})
		must(err)
		if st.Total() != 0 {
			t.Fatalf("second purge deleted %+v", st)
		}
	})
}

// TestPurgeBatches: more dead rows than one batch all go, each DELETE
// removing at most Batch rows.
func TestPurgeBatches(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		now := time.Now().UTC().Truncate(time.Second)
		for i := range 25 {
			if err := f.st.CreateAccessTokenSession(f.a, fmt.Sprintf("a-%02d", i), expiring(f.ca, "r", now.Add(-time.Minute))); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.st.CreateAccessTokenSession(f.a, "a-live", expiring(f.ca, "r", now.Add(time.Minute))); err != nil {
			t.Fatal(err)
		}
		counted, count := d.CountQueries()
		st, err := store.New(counted).Purge(context.Background(), store.PurgePolicy{Now: now, Grace: time.Hour, Batch: 10})
		if err != nil {
			t.Fatal(err)
		}
		if st.AccessTokens != 25 || st.Total() != 25 {
			t.Fatalf("purged %+v, want 25 access tokens", st)
		}
		// 10 + 10 + 5 for the access tokens, one (empty) batch for each of
		// the five other tables (flash_nonces included).
		if n := count(); n != 8 {
			t.Fatalf("%d statements, want 8", n)
		}
		var left int64
		if err := tenant.Scope(f.a, d.Table("oauth_access_tokens")).Count(&left).Error; err != nil {
			t.Fatal(err)
		}
		if left != 1 {
			t.Fatalf("%d access tokens left, want 1", left)
		}
		// A cancelled context stops before deleting anything.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := f.st.Purge(ctx, store.PurgePolicy{Now: now.Add(time.Hour)}); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled purge: %v", err)
		}
		if !exists(t, d, f.a, "oauth_access_tokens", "signature", "a-live") {
			t.Fatal("cancelled purge deleted a row")
		}
	})
}
