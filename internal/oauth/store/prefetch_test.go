package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/ory/fosite"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/oauth/store"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
)

// TestPrefetchRefresh: the refresh grant's client and token read together
// answer the grant's two lookups in one query, with what the separate
// reads return; the token is taken once; anything the prefetch did not
// read (another token, another tenant, a transaction) is read as before.
func TestPrefetchRefresh(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		if err := f.st.CreateRefreshTokenSession(f.a, "rt1", "at1", request(f.ca, "fam")); err != nil {
			t.Fatal(err)
		}
		plain, err := f.st.GetRefreshTokenSession(f.a, "rt1", nil)
		if err != nil {
			t.Fatal(err)
		}
		counted, count := d.CountQueries()
		st := store.New(counted)
		at := func(want int) {
			t.Helper()
			if n := count(); n != want {
				t.Fatalf("%d queries, want %d", n, want)
			}
		}

		ctx := store.WithClientMemo(f.a)
		st.PrefetchRefresh(ctx, sharedClientID, "rt1")
		c, err := st.Client(ctx, sharedClientID)
		if err != nil || c.Name != "App of acme" || c.SecretHash != f.ca.SecretHash {
			t.Fatalf("client: %+v %v", c, err)
		}
		got, err := st.GetRefreshTokenSession(ctx, "rt1", nil)
		if err != nil {
			t.Fatal(err)
		}
		at(1)
		if got.GetID() != plain.GetID() || got.GetClient().GetID() != sharedClientID ||
			!got.GetRequestedAt().Equal(plain.GetRequestedAt()) || got.GetSession().GetSubject() != "1" ||
			!slices.Equal(got.GetGrantedScopes(), plain.GetGrantedScopes()) ||
			!slices.Equal(got.GetRequestedScopes(), plain.GetRequestedScopes()) ||
			got.GetRequestForm().Encode() != plain.GetRequestForm().Encode() ||
			!got.GetSession().GetExpiresAt(fosite.RefreshToken).Equal(plain.GetSession().GetExpiresAt(fosite.RefreshToken)) {
			t.Fatalf("prefetched %+v, read alone %+v", got, plain)
		}
		// Taken once: the next read goes to the database.
		if _, err := st.GetRefreshTokenSession(ctx, "rt1", nil); err != nil {
			t.Fatal(err)
		}
		at(2)

		// A token that does not exist: one query for both lookups, and
		// the grant learns it is not found.
		ctx = store.WithClientMemo(f.a)
		st.PrefetchRefresh(ctx, sharedClientID, "rt-missing")
		if _, err := st.GetRefreshTokenSession(ctx, "rt-missing", nil); !errors.Is(err, fosite.ErrNotFound) {
			t.Fatalf("missing token: %v", err)
		}
		at(3)

		// An inactive (used) token is prefetched as inactive: fosite's
		// reuse handling sees ErrInactiveToken with the family's id.
		if err := f.st.RotateRefreshToken(f.a, "fam", "rt1"); err != nil {
			t.Fatal(err)
		}
		ctx = store.WithClientMemo(f.a)
		st.PrefetchRefresh(ctx, sharedClientID, "rt1")
		if r, err := st.GetRefreshTokenSession(ctx, "rt1", nil); !errors.Is(err, fosite.ErrInactiveToken) || r == nil || r.GetID() != "fam" {
			t.Fatalf("used token: %v %v", r, err)
		}
		at(4)

		// Another token than the one prefetched is read on its own.
		ctx = store.WithClientMemo(f.a)
		st.PrefetchRefresh(ctx, sharedClientID, "rt1")
		if _, err := st.GetRefreshTokenSession(ctx, "rt-other", nil); !errors.Is(err, fosite.ErrNotFound) {
			t.Fatalf("other token: %v", err)
		}
		at(6)

		// Tenant B's context never sees what tenant A's prefetch read.
		ctx = store.WithClientMemo(f.a)
		st.PrefetchRefresh(ctx, sharedClientID, "rt1")
		b := tenant.NewContext(ctx, tenant.MustFromContext(f.b))
		if _, err := st.GetRefreshTokenSession(b, "rt1", nil); !errors.Is(err, fosite.ErrNotFound) {
			t.Fatalf("tenant B read A's token: %v", err)
		}
		if c, err := st.Client(b, sharedClientID); err != nil || c.Name != "App of globex" {
			t.Fatalf("tenant B client: %v %v", c, err)
		}
		at(9)

		// An unknown app prefetches nothing: the reads happen as usual.
		ctx = store.WithClientMemo(f.a)
		st.PrefetchRefresh(ctx, "app_missing", "rt1")
		if _, err := st.Client(ctx, "app_missing"); !errors.Is(err, fosite.ErrNotFound) {
			t.Fatalf("missing app: %v", err)
		}
		at(11)

		// Without a memo there is nowhere to keep it: no query.
		st.PrefetchRefresh(context.WithoutCancel(f.a), sharedClientID, "rt1")
		at(11)
	})
}
