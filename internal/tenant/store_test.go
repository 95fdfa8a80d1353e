package tenant_test

import (
	"sync"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
)

func TestValidSlug(t *testing.T) {
	for _, s := range []string{"ab", "acme", "acme-2", "0x", "a-b-c", "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij123"} {
		if !tenant.ValidSlug(s) {
			t.Errorf("ValidSlug(%q) = false", s)
		}
	}
	for _, s := range []string{"", "a", "Acme", "acme_co", "acme.co", "-acme", "acme-", "ac me", "äbc",
		"abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij1234"} {
		if tenant.ValidSlug(s) {
			t.Errorf("ValidSlug(%q) = true", s)
		}
	}
}

func TestStoreCreateAndBySlug(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx := t.Context()
		s := tenant.NewStore(d)
		a, err := s.Create(ctx, "acme", "Acme Inc.")
		if err != nil {
			t.Fatal(err)
		}
		if a.ID == 0 || a.Slug != "acme" || a.Name != "Acme Inc." || a.CreatedAt.IsZero() {
			t.Errorf("Create = %+v", a)
		}
		b, err := s.Create(ctx, "beta", "")
		if err != nil {
			t.Fatal(err)
		}
		if b.Name != "beta" || b.ID == a.ID {
			t.Errorf("second tenant = %+v", b)
		}

		got, err := s.BySlug(ctx, "acme")
		if err != nil || got.ID != a.ID || got.Name != "Acme Inc." {
			t.Errorf("BySlug(acme) = %+v, %v", got, err)
		}
		if _, err := s.BySlug(ctx, "nope"); !apperr.Is(err, apperr.NotFound) {
			t.Errorf("BySlug(unknown) error = %v, want NotFound", err)
		}
		if _, err := s.BySlug(ctx, "NOT A SLUG"); !apperr.Is(err, apperr.NotFound) {
			t.Errorf("BySlug(invalid) error = %v, want NotFound", err)
		}
		if got, err := s.ByID(ctx, b.ID); err != nil || got.Slug != "beta" {
			t.Errorf("ByID = %+v, %v", got, err)
		}
		if _, err := s.ByID(ctx, 99999); !apperr.Is(err, apperr.NotFound) {
			t.Errorf("ByID(unknown) error = %v", err)
		}

		_, err = s.Create(ctx, "acme", "Other")
		if !apperr.Is(err, apperr.Conflict) {
			t.Fatalf("duplicate slug: %v, want Conflict", err)
		}
		if e := err.(*apperr.Error); len(e.Fields["slug"]) == 0 {
			t.Errorf("duplicate slug error lacks a slug field message: %+v", e)
		}
		for _, bad := range []string{"A", "-x-", "has space"} {
			_, err = s.Create(ctx, bad, "")
			if !apperr.Is(err, apperr.Invalid) || len(err.(*apperr.Error).Fields["slug"]) == 0 {
				t.Errorf("Create(%q) = %v, want Invalid with field slug", bad, err)
			}
		}
	})
}

func TestStoreCache(t *testing.T) {
	d := testdb.SQLite(t)
	ctx := t.Context()
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(dur time.Duration) { mu.Lock(); now = now.Add(dur); mu.Unlock() }

	s := tenant.NewStore(d, tenant.WithClock(clock))
	if _, err := s.Create(ctx, "acme", "Acme"); err != nil {
		t.Fatal(err)
	}
	counted, count := d.CountQueries()
	cs := tenant.NewStore(counted, tenant.WithClock(clock))

	for range 5 {
		if _, err := cs.BySlug(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(); n != 1 {
		t.Errorf("5 lookups within the TTL ran %d queries, want 1", n)
	}
	// Callers get copies: mutating one does not poison the cache.
	got, _ := cs.BySlug(ctx, "acme")
	got.Name = "mutated"
	if again, _ := cs.BySlug(ctx, "acme"); again.Name != "Acme" {
		t.Errorf("cache returned a shared pointer: name %q", again.Name)
	}

	// A rename in the database shows once the entry expires.
	if err := d.Exec("UPDATE tenants SET name = 'Acme 2' WHERE slug = 'acme'").Error; err != nil {
		t.Fatal(err)
	}
	if got, _ := cs.BySlug(ctx, "acme"); got.Name != "Acme" {
		t.Errorf("within TTL got %q, want the cached name", got.Name)
	}
	advance(tenant.DefaultCacheTTL + time.Second)
	if got, _ := cs.BySlug(ctx, "acme"); got.Name != "Acme 2" {
		t.Errorf("after TTL got %q, want the new name", got.Name)
	}

	// Unknown tenants are cached briefly, and Create on the same store
	// makes the new tenant visible at once.
	before := count()
	for range 3 {
		if _, err := cs.BySlug(ctx, "late"); !apperr.Is(err, apperr.NotFound) {
			t.Fatal(err)
		}
	}
	if n := count() - before; n != 1 {
		t.Errorf("3 unknown lookups ran %d queries, want 1", n)
	}
	if _, err := cs.Create(ctx, "late", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.BySlug(ctx, "late"); err != nil {
		t.Errorf("tenant created through the store is not visible: %v", err)
	}
	// Created elsewhere (another process): visible after the short negative TTL.
	if _, err := cs.BySlug(ctx, "other"); !apperr.Is(err, apperr.NotFound) {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "other", ""); err != nil {
		t.Fatal(err)
	}
	advance(3 * time.Second)
	if _, err := cs.BySlug(ctx, "other"); err != nil {
		t.Errorf("tenant created elsewhere not visible after the negative TTL: %v", err)
	}
	// Invalid slugs never reach the database.
	before = count()
	cs.BySlug(ctx, "Bad Slug")
	if count() != before {
		t.Error("an invalid slug was looked up in the database")
	}

	nocache := tenant.NewStore(counted, tenant.WithCacheTTL(0))
	before = count()
	nocache.BySlug(ctx, "acme")
	nocache.BySlug(ctx, "acme")
	if n := count() - before; n != 2 {
		t.Errorf("with caching off: %d queries, want 2", n)
	}
}

func TestStoreConcurrentCreate(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		s := tenant.NewStore(d)
		var wg sync.WaitGroup
		results := make(chan error, 6)
		for range 6 {
			wg.Go(func() {
				_, err := s.Create(t.Context(), "race", "")
				results <- err
			})
		}
		wg.Wait()
		close(results)
		var ok, conflict int
		for err := range results {
			switch {
			case err == nil:
				ok++
			case apperr.Is(err, apperr.Conflict):
				conflict++
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}
		if ok != 1 || conflict != 5 {
			t.Errorf("concurrent creates: %d ok, %d conflicts; want 1 and 5", ok, conflict)
		}
	})
}
