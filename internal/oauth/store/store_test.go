package store_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ory/fosite"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/oauth/store"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
)

// fixture: two tenants, each with user 1 and an app with the same client
// id, so that every lookup must tell them apart by tenant alone.
type fixture struct {
	st     *store.Store
	a, b   context.Context
	ca, cb *store.Client
}

const sharedClientID = "app_shared"

func setup(t *testing.T, d *db.DB) *fixture {
	f := &fixture{st: store.New(d)}
	var tids [2]int64
	for i, slug := range []string{"acme", "globex"} {
		ctx, tn := testdb.NewTenant(t, d, slug)
		tids[i] = tn.ID
		if err := d.Table("users").Create(map[string]any{"tenant_id": tn.ID, "id": 1, "email": "u@" + slug + ".example.com",
			"name": "U", "role": "admin", "password_hash": "!"}).Error; err != nil {
			t.Fatal(err)
		}
		c := &store.Client{TenantID: tn.ID, ID: sharedClientID, Name: "App of " + slug, SecretHash: store.HashSecret("secret-" + slug),
			RedirectURIs: `["https://` + slug + `.example.com/cb"]`, Scopes: "clients:read acts:read"}
		if err := d.Create(c).Error; err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			f.a, f.ca = ctx, c
		} else {
			f.b, f.cb = ctx, c
		}
	}
	return f
}

func request(c *store.Client, id string) *fosite.Request {
	now := time.Now().UTC().Truncate(time.Second)
	return &fosite.Request{
		ID: id, RequestedAt: now, Client: c,
		RequestedScope: fosite.Arguments{"clients:read", "acts:read"}, GrantedScope: fosite.Arguments{"clients:read"},
		Form: url.Values{
			"redirect_uri": {"https://acme.example.com/cb"}, "code_challenge": {"abc"},
			// Must never be stored:
			"code": {"ory_ac_secret.code"}, "client_secret": {"the-secret"}, "refresh_token": {"ory_rt_x.y"}, "code_verifier": {"verifier"},
		},
		Session: &fosite.DefaultSession{Subject: "1", ExpiresAt: map[fosite.TokenType]time.Time{
			fosite.AuthorizeCode: now.Add(10 * time.Minute), fosite.AccessToken: now.Add(time.Hour), fosite.RefreshToken: now.Add(24 * time.Hour),
		}},
	}
}

func TestClients(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		ca, err := f.st.GetClient(f.a, sharedClientID)
		if err != nil {
			t.Fatal(err)
		}
		cb, err := f.st.GetClient(f.b, sharedClientID)
		if err != nil {
			t.Fatal(err)
		}
		if ca.(*store.Client).Name != "App of acme" || cb.(*store.Client).Name != "App of globex" {
			t.Fatalf("clients mixed up: %q %q", ca.(*store.Client).Name, cb.(*store.Client).Name)
		}
		if got := ca.GetRedirectURIs(); len(got) != 1 || got[0] != "https://acme.example.com/cb" {
			t.Fatalf("redirect URIs %v", got)
		}
		if _, err := f.st.GetClient(f.a, "app_missing"); !errors.Is(err, fosite.ErrNotFound) {
			t.Fatalf("missing client: %v", err)
		}
		h := store.SecretHasher{}
		if err := h.Compare(f.a, ca.GetHashedSecret(), []byte("secret-acme")); err != nil {
			t.Fatal(err)
		}
		if err := h.Compare(f.a, ca.GetHashedSecret(), []byte("secret-globex")); err == nil {
			t.Fatal("tenant B's secret matched tenant A's app")
		}
	})
}

// TestClientMemo: within one request's memo an app is loaded once; the
// memo answers only for the tenant and id it holds, and remembers no
// failed lookup.
func TestClientMemo(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		counted, count := d.CountQueries()
		st := store.New(counted)
		a := store.WithClientMemo(f.a)
		for range 3 {
			c, err := st.Client(a, sharedClientID)
			if err != nil || c.Name != "App of acme" {
				t.Fatalf("client: %v %v", c, err)
			}
		}
		if n := count(); n != 1 {
			t.Fatalf("3 lookups in one memo ran %d queries, want 1", n)
		}
		// The same id in tenant B, under the memo holding A's app: B's app.
		b := tenant.NewContext(a, tenant.MustFromContext(f.b))
		if c, err := st.Client(b, sharedClientID); err != nil || c.Name != "App of globex" {
			t.Fatalf("tenant B: %v %v", c, err)
		}
		for range 2 {
			if _, err := st.Client(a, "app_missing"); !errors.Is(err, fosite.ErrNotFound) {
				t.Fatalf("missing client: %v", err)
			}
		}
		if n := count(); n != 4 {
			t.Fatalf("%d queries, want 4 (A once, B once, the missing app twice)", n)
		}
		// Without a memo every lookup is a query.
		for range 2 {
			if _, err := st.Client(f.a, sharedClientID); err != nil {
				t.Fatal(err)
			}
		}
		if n := count(); n != 6 {
			t.Fatalf("%d queries, want 6", n)
		}
	})
}

func TestAuthorizeCodes(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		// The same signature and request id in both tenants.
		for _, ctx := range []context.Context{f.a, f.b} {
			c := f.ca
			if ctx == f.b {
				c = f.cb
			}
			if err := f.st.CreateAuthorizeCodeSession(ctx, "sig1", request(c, "req1")); err != nil {
				t.Fatal(err)
			}
		}
		r, err := f.st.GetAuthorizeCodeSession(f.a, "sig1", &fosite.DefaultSession{})
		if err != nil {
			t.Fatal(err)
		}
		if r.GetID() != "req1" || r.GetClient().(*store.Client).Name != "App of acme" || r.GetSession().GetSubject() != "1" ||
			!r.GetGrantedScopes().Has("clients:read") || r.GetRequestedScopes().Has("missing") {
			t.Fatalf("request: %+v", r)
		}
		form := r.GetRequestForm()
		if form.Get("redirect_uri") != "https://acme.example.com/cb" || form.Get("code_challenge") != "abc" {
			t.Fatalf("form lost data: %v", form)
		}
		for _, k := range []string{"code", "client_secret", "refresh_token", "code_verifier"} {
			if form.Has(k) {
				t.Fatalf("form stored %s", k)
			}
		}
		var raw []string
		d.Table("oauth_codes").Pluck("form_data", &raw)
		for _, fd := range raw {
			if strings.Contains(fd, "the-secret") || strings.Contains(fd, "ory_ac_secret") {
				t.Fatalf("secret in stored form: %s", fd)
			}
		}
		// Invalidate in A: A's code is used (request returned with the
		// sentinel), B's is untouched.
		if err := f.st.InvalidateAuthorizeCodeSession(f.a, "sig1"); err != nil {
			t.Fatal(err)
		}
		r, err = f.st.GetAuthorizeCodeSession(f.a, "sig1", nil)
		if !errors.Is(err, fosite.ErrInvalidatedAuthorizeCode) || r == nil || r.GetID() != "req1" {
			t.Fatalf("used code: %v %v", r, err)
		}
		if _, err := f.st.GetAuthorizeCodeSession(f.b, "sig1", nil); err != nil {
			t.Fatalf("tenant B's code affected: %v", err)
		}
		// A second invalidation loses: one winner per code.
		err = f.st.InvalidateAuthorizeCodeSession(f.a, "sig1")
		if !errors.Is(err, store.ErrAlreadyUsed) || !errors.Is(err, fosite.ErrInvalidatedAuthorizeCode) {
			t.Fatalf("second invalidation: %v", err)
		}
		if _, err := f.st.GetAuthorizeCodeSession(f.a, "nope", nil); !errors.Is(err, fosite.ErrNotFound) {
			t.Fatalf("unknown code: %v", err)
		}
	})
}

func TestTokensAndRevocation(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		for _, x := range []struct {
			ctx context.Context
			c   *store.Client
		}{{f.a, f.ca}, {f.b, f.cb}} {
			if err := f.st.CreateAccessTokenSession(x.ctx, "at1", request(x.c, "fam")); err != nil {
				t.Fatal(err)
			}
			if err := f.st.CreateRefreshTokenSession(x.ctx, "rt1", "at1", request(x.c, "fam")); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := f.st.GetAccessTokenSession(f.a, "at1", nil); err != nil {
			t.Fatal(err)
		}
		// Rotation: the refresh token turns inactive (still readable, for
		// reuse detection), its access token is gone.
		if err := f.st.RotateRefreshToken(f.a, "fam", "rt1"); err != nil {
			t.Fatal(err)
		}
		r, err := f.st.GetRefreshTokenSession(f.a, "rt1", nil)
		if !errors.Is(err, fosite.ErrInactiveToken) || r == nil || r.GetID() != "fam" {
			t.Fatalf("rotated refresh token: %v %v", r, err)
		}
		if _, err := f.st.GetAccessTokenSession(f.a, "at1", nil); !errors.Is(err, fosite.ErrNotFound) {
			t.Fatalf("access token of a rotated refresh token: %v", err)
		}
		if err := f.st.RotateRefreshToken(f.a, "fam", "rt1"); !errors.Is(err, fosite.ErrInactiveToken) {
			t.Fatalf("second rotation: %v", err)
		}
		// Tenant B untouched.
		if _, err := f.st.GetRefreshTokenSession(f.b, "rt1", nil); err != nil {
			t.Fatalf("tenant B's refresh token: %v", err)
		}
		if _, err := f.st.GetAccessTokenSession(f.b, "at1", nil); err != nil {
			t.Fatalf("tenant B's access token: %v", err)
		}
		// Family revocation in A spares B's family with the same id.
		if err := f.st.CreateAccessTokenSession(f.a, "at2", request(f.ca, "fam")); err != nil {
			t.Fatal(err)
		}
		if err := f.st.CreateRefreshTokenSession(f.a, "rt2", "at2", request(f.ca, "fam")); err != nil {
			t.Fatal(err)
		}
		if err := f.st.RevokeAccessToken(f.a, "fam"); err != nil {
			t.Fatal(err)
		}
		if err := f.st.RevokeRefreshToken(f.a, "fam"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.GetAccessTokenSession(f.a, "at2", nil); !errors.Is(err, fosite.ErrNotFound) {
			t.Fatalf("revoked access token: %v", err)
		}
		if _, err := f.st.GetRefreshTokenSession(f.a, "rt2", nil); !errors.Is(err, fosite.ErrInactiveToken) {
			t.Fatalf("revoked refresh token: %v", err)
		}
		if _, err := f.st.GetRefreshTokenSession(f.b, "rt1", nil); err != nil {
			t.Fatalf("tenant B's family was revoked: %v", err)
		}
		if _, err := f.st.GetAccessTokenSession(f.b, "at1", nil); err != nil {
			t.Fatalf("tenant B's family was revoked: %v", err)
		}
		// Deletes are tenant-scoped too.
		if err := f.st.DeleteRefreshTokenSession(f.a, "rt1"); err != nil {
			t.Fatal(err)
		}
		if err := f.st.DeleteAccessTokenSession(f.a, "at1"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.GetRefreshTokenSession(f.b, "rt1", nil); err != nil {
			t.Fatalf("delete in A removed B's token: %v", err)
		}
		// PKCE.
		if err := f.st.CreatePKCERequestSession(f.a, "p1", request(f.ca, "req")); err != nil {
			t.Fatal(err)
		}
		if r, err := f.st.GetPKCERequestSession(f.a, "p1", nil); err != nil || r.GetRequestForm().Get("code_challenge") != "abc" {
			t.Fatalf("pkce: %v", err)
		}
		if _, err := f.st.GetPKCERequestSession(f.b, "p1", nil); !errors.Is(err, fosite.ErrNotFound) {
			t.Fatalf("tenant B sees A's PKCE: %v", err)
		}
		if err := f.st.DeletePKCERequestSession(f.a, "p1"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.GetPKCERequestSession(f.a, "p1", nil); !errors.Is(err, fosite.ErrNotFound) {
			t.Fatalf("deleted pkce: %v", err)
		}
	})
}

func TestTransactions(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		ctx, err := f.st.BeginTX(f.a)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.BeginTX(ctx); err == nil {
			t.Fatal("nested BeginTX accepted")
		}
		if err := f.st.CreateAccessTokenSession(ctx, "tx1", request(f.ca, "r")); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.GetAccessTokenSession(ctx, "tx1", nil); err != nil {
			t.Fatalf("inside the transaction: %v", err)
		}
		if err := f.st.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.GetAccessTokenSession(f.a, "tx1", nil); !errors.Is(err, fosite.ErrNotFound) {
			t.Fatalf("rolled back row exists: %v", err)
		}
		ctx, err = f.st.BeginTX(f.a)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.st.CreateAccessTokenSession(ctx, "tx2", request(f.ca, "r")); err != nil {
			t.Fatal(err)
		}
		if err := f.st.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.GetAccessTokenSession(f.a, "tx2", nil); err != nil {
			t.Fatalf("committed row: %v", err)
		}
		if err := f.st.Commit(f.a); err == nil {
			t.Fatal("commit without a transaction accepted")
		}
	})
}

func TestConsents(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		if ok, err := f.st.HasConsent(f.a, 1, sharedClientID, []string{"clients:read"}); ok || err != nil {
			t.Fatalf("consent before any: %v %v", ok, err)
		}
		if err := f.st.SaveConsent(f.a, 1, sharedClientID, []string{"clients:read"}); err != nil {
			t.Fatal(err)
		}
		if err := f.st.SaveConsent(f.a, 1, sharedClientID, []string{"acts:read"}); err != nil {
			t.Fatal(err)
		}
		if ok, _ := f.st.HasConsent(f.a, 1, sharedClientID, []string{"acts:read", "clients:read"}); !ok {
			t.Fatal("merged consent not found")
		}
		if ok, _ := f.st.HasConsent(f.a, 1, sharedClientID, []string{"acts:write"}); ok {
			t.Fatal("consent covers an ungranted scope")
		}
		if ok, _ := f.st.HasConsent(f.b, 1, sharedClientID, []string{"clients:read"}); ok {
			t.Fatal("tenant B sees tenant A's consent")
		}
		apps, err := f.st.AuthorizedApps(f.a, 1)
		if err != nil || len(apps) != 1 || apps[0].Name != "App of acme" {
			t.Fatalf("authorized apps: %+v %v", apps, err)
		}
		if apps, _ := f.st.AuthorizedApps(f.b, 1); len(apps) != 0 {
			t.Fatalf("tenant B lists %v", apps)
		}
		if err := f.st.RevokeUserApp(f.a, 1, sharedClientID); err != nil {
			t.Fatal(err)
		}
		if ok, _ := f.st.HasConsent(f.a, 1, sharedClientID, []string{"clients:read"}); ok {
			t.Fatal("consent survived the revoke")
		}
	})
}
