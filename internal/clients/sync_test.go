package clients_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/testdb"
)

// An incremental sync that follows the documented recipe (page 1, then
// updated_since = the last updated_at seen) while writers create and
// update clients concurrently misses no change and sees none twice: every
// updated_at it receives is later than the one before, and once the
// writers are done, it holds every client's last version. This is what
// db.Stamp's commit order is for; with plain clock times a writer that
// read the clock first but committed last would be skipped.
func TestSyncWhileWriting(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		s := clients.NewStore(d)
		ctx, _ := testdb.NewTenant(t, d, "acme")
		for i := range 20 {
			mustCreate(t, s, ctx, input(fmt.Sprint("seed ", i)))
		}
		const writers, writes = 4, 25
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range writes {
					var err error
					if i%5 == 0 {
						_, err = s.Create(ctx, input(fmt.Sprintf("new %d.%d", w, i)))
					} else {
						name := fmt.Sprintf("w%d i%d", w, i)
						_, err = s.Update(ctx, int64(1+(w*7+i)%20), clients.Patch{CompanyName: &name})
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()

		seen := map[int64]clients.Client{}
		cursor := time.Unix(0, 0)
		pull := func() int {
			t.Helper()
			// The total is read before the page, by its own statement:
			// under concurrent writes it may lag; the page is what counts.
			list, _, err := s.List(ctx, clients.Filter{UpdatedSince: &cursor}, page.Request{Page: 1, Limit: 7})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range list {
				if !c.UpdatedAt.After(cursor) {
					t.Fatalf("client %d updated_at %s not after the cursor %s", c.ID, c.UpdatedAt, cursor)
				}
				cursor = c.UpdatedAt
				seen[c.ID] = c
			}
			return len(list)
		}
	loop:
		for {
			select {
			case <-done:
				break loop
			default:
				pull()
			}
		}
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for pull() > 0 {
		}
		all, total, err := s.List(ctx, clients.Filter{}, page.Request{Page: 1, Limit: 100})
		if err != nil || total != 20+writers*writes/5 {
			t.Fatalf("List = %d clients, %v", total, err)
		}
		for _, c := range all {
			got, ok := seen[c.ID]
			if !ok || !got.UpdatedAt.Equal(c.UpdatedAt) || got.CompanyName != c.CompanyName {
				t.Errorf("client %d: the sync holds %q at %s, the list %q at %s", c.ID, got.CompanyName, got.UpdatedAt, c.CompanyName, c.UpdatedAt)
			}
		}
		if len(seen) != len(all) {
			t.Errorf("the sync saw %d clients, the list has %d", len(seen), len(all))
		}
	})
}

// Stamps are unique and increasing even when the clock stands still or
// goes back.
func TestStampMonotonic(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		_, a := testdb.NewTenant(t, d, "acme")
		fixed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		var prev time.Time
		for i, now := range []time.Time{fixed, fixed, fixed.Add(-time.Hour), fixed.Add(time.Second), fixed} {
			got, err := db.Stamp(d.DB, a.ID, "clients", now)
			if err != nil {
				t.Fatal(err)
			}
			if !got.After(prev) || got.Before(now) {
				t.Fatalf("stamp %d at clock %s = %s, previous %s", i, now, got, prev)
			}
			prev = got
		}
		if want := fixed.Add(time.Second + time.Microsecond); !prev.Equal(want) {
			t.Fatalf("last stamp %s, want %s", prev, want)
		}
	})
}
