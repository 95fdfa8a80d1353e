package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
)

// syncPage is any updated_since list: rows keyed by id (clients,
// templates) or uuid (acts).
type syncPage struct {
	Data []struct {
		ID        json.Number `json:"id"`
		UUID      string      `json:"uuid"`
		UpdatedAt string      `json:"updated_at"`
	} `json:"data"`
	Meta models.PageMeta `json:"meta"`
}

// A sync that sends back meta.next_updated_since verbatim, with every
// change of a list stamped within the same millisecond (the clocks are
// frozen, so each stamp is one microsecond past the previous), sees each
// change exactly once, in order, including a row changed mid-sync; the
// millisecond a JavaScript Date would keep instead repeats rows. The
// tombstone lists do the same with meta.next_deleted_since.
func TestSyncResumesFromMeta(t *testing.T) {
	frozen := time.Now().UTC().Truncate(time.Millisecond).Add(time.Millisecond + 100*time.Microsecond)
	clock := func() time.Time { return frozen }
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		env.DB.Config.NowFunc = clock
		f := newActFixture(t, env, "acme")
		tok := f.AdminToken()
		type list struct {
			path   string
			create func(i int)
			change func(key string)
		}
		lists := []list{
			{"clients", func(i int) {
				f.Do("POST", "/api/1.0/clients", tok, map[string]any{
					"company_name": fmt.Sprint("Sync ", i), "org_number": fmt.Sprint(100 + i), "country": "NO", "credit_limit": 1,
				}).Status(t, http.StatusCreated)
			}, func(key string) {
				f.Do("PATCH", "/api/1.0/clients/"+key, tok, `{"credit_limit": 2}`).Status(t, http.StatusOK)
			}},
			{"acts", func(i int) { f.createAct(t, fmt.Sprint("sync ", i)) }, func(key string) {
				f.Do("PATCH", "/api/1.0/acts/"+key, tok, `{"title": "changed"}`).Status(t, http.StatusOK)
			}},
			{"templates", func(i int) {
				f.Do("POST", "/api/1.0/templates", tok, oneField("text", "manual", "")).Status(t, http.StatusCreated)
			}, nil},
		}
		for _, l := range lists {
			for i := range 5 {
				l.create(i)
			}
			get := func(next string) syncPage {
				t.Helper()
				var p syncPage
				f.Do("GET", "/api/1.0/"+l.path+"?limit=2&updated_since="+url.QueryEscape(next), tok, nil).Status(t, http.StatusOK).Decode(t, &p)
				if p.Meta.NextUpdatedSince == nil {
					t.Fatalf("%s: no meta.next_updated_since: %+v", l.path, p.Meta)
				}
				return p
			}
			next := "1970-01-01T00:00:00Z"
			seen := map[string]bool{}
			var order, stamps []string
			changed := ""
			for pages := 0; ; pages++ {
				if pages > 20 {
					t.Fatalf("%s: the sync does not end: %v", l.path, order)
				}
				p := get(next)
				if len(p.Data) == 0 {
					if *p.Meta.NextUpdatedSince != next {
						t.Fatalf("%s: an empty page moves the position from %s to %s", l.path, next, *p.Meta.NextUpdatedSince)
					}
					break
				}
				for _, r := range p.Data {
					key := r.UUID + r.ID.String()
					change := key + "@" + r.UpdatedAt
					if seen[change] {
						t.Fatalf("%s: %s seen twice (%v)", l.path, change, order)
					}
					seen[change] = true
					order, stamps = append(order, key), append(stamps, r.UpdatedAt)
				}
				lastAt, _ := time.Parse(time.RFC3339Nano, p.Data[len(p.Data)-1].UpdatedAt)
				if want := lastAt.Format("2006-01-02T15:04:05.000000Z"); *p.Meta.NextUpdatedSince != want {
					t.Fatalf("%s: next_updated_since %s, want the last row's %s", l.path, *p.Meta.NextUpdatedSince, want)
				}
				next = *p.Meta.NextUpdatedSince
				if pages == 0 && l.change != nil {
					// A change to the first row while the sync runs brings it back at the end.
					changed = order[0]
					l.change(changed)
				}
			}
			rows := 5 + map[string]int{"clients": 1, "acts": 0, "templates": 1}[l.path] // the fixture's client and template
			if l.change != nil {
				rows++
				if order[len(order)-1] != changed {
					t.Fatalf("%s: the row changed mid-sync (%s) is not last: %v", l.path, changed, order)
				}
			}
			if len(order) != rows {
				t.Fatalf("%s: %d changes seen, want %d: %v", l.path, len(order), rows, order)
			}
			// The changes made here are microseconds apart, within one millisecond.
			first, _ := time.Parse(time.RFC3339Nano, stamps[len(stamps)-5])
			last, _ := time.Parse(time.RFC3339Nano, stamps[len(stamps)-1])
			if d := last.Sub(first); d <= 0 || d >= time.Millisecond || first.Truncate(time.Millisecond) != last.Truncate(time.Millisecond) {
				t.Fatalf("%s: the last changes span %s (%s to %s), not within one millisecond", l.path, d, first, last)
			}
			// What a client that keeps milliseconds would send: rows it has
			// already processed come again.
			ms := first.Truncate(time.Millisecond).Format("2006-01-02T15:04:05.000Z")
			if p := get(ms); len(p.Data) == 0 || !seen[p.Data[0].UUID+p.Data[0].ID.String()+"@"+p.Data[0].UpdatedAt] {
				t.Fatalf("%s: resuming from %s does not repeat a processed row: %+v", l.path, ms, p.Data)
			}
		}

		// Tombstones: two deletions a microsecond apart, one per page.
		for _, id := range []string{"2", "3"} {
			f.Do("DELETE", "/api/1.0/clients/"+id, tok, nil).Status(t, http.StatusNoContent)
		}
		var dl models.DeletedClientList
		f.Do("GET", "/api/1.0/deleted/clients?limit=1", tok, nil).Status(t, http.StatusOK).Decode(t, &dl)
		if dl.Meta.NextDeletedSince == nil || len(dl.Data) != 1 || dl.Data[0].Id != 2 {
			t.Fatalf("first tombstone = %+v", dl)
		}
		first := *dl.Meta.NextDeletedSince
		f.Do("GET", "/api/1.0/deleted/clients?limit=1&deleted_since="+url.QueryEscape(first), tok, nil).Status(t, http.StatusOK).Decode(t, &dl)
		if len(dl.Data) != 1 || dl.Data[0].Id != 3 || dl.Meta.NextDeletedSince == nil || *dl.Meta.NextDeletedSince == first ||
			dl.Data[0].DeletedAt.Sub(mustTime(t, first)) != time.Microsecond {
			t.Fatalf("after %s = %+v", first, dl)
		}
		second := *dl.Meta.NextDeletedSince
		f.Do("GET", "/api/1.0/deleted/clients?deleted_since="+url.QueryEscape(second), tok, nil).Status(t, http.StatusOK).Decode(t, &dl)
		if len(dl.Data) != 0 || dl.Meta.NextDeletedSince == nil || *dl.Meta.NextDeletedSince != second {
			t.Fatalf("after the last tombstone = %+v", dl)
		}
		// Without a position, an empty tombstone page has none to give; a
		// list without updated_since has no sync position either.
		var al models.DeletedActList
		f.Do("GET", "/api/1.0/deleted/acts", tok, nil).Status(t, http.StatusOK).Decode(t, &al)
		if al.Meta.NextDeletedSince != nil {
			t.Fatalf("empty tombstone list without deleted_since: %+v", al.Meta)
		}
		var cl models.ClientList
		f.Do("GET", "/api/1.0/clients", tok, nil).Status(t, http.StatusOK).Decode(t, &cl)
		if cl.Meta.NextUpdatedSince != nil {
			t.Fatalf("a list without updated_since gives %s", *cl.Meta.NextUpdatedSince)
		}
		// A position given beyond microseconds comes back at microseconds.
		f.Do("GET", "/api/1.0/clients?updated_since=2999-01-01T00:00:00.123456789%2B01:00", tok, nil).Status(t, http.StatusOK).Decode(t, &cl)
		if cl.Meta.NextUpdatedSince == nil || *cl.Meta.NextUpdatedSince != "2998-12-31T23:00:00.123456Z" || !strings.HasSuffix(*cl.Meta.NextUpdatedSince, "Z") {
			t.Fatalf("normalized position = %v", cl.Meta.NextUpdatedSince)
		}
	}, apitest.WithApp(app.WithClock(clock)))
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
