package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/acts/actstest"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// checkInvariants reads an act and its whole history after a race and
// verifies, for every external data point:
//   - its revision equals the number of value changes in the history
//     (value_accepted and value_edited entries naming it);
//   - its value is the new_value of the last of them (or null without any);
//   - an accepted fetch state's result is the current source value.
//
// It returns the act for further checks.
func checkInvariants(t *testing.T, f *actFixture, a models.Act) (models.Act, []models.HistoryEntry) {
	t.Helper()
	got := f.getAct(t, a)
	var hist []models.HistoryEntry
	for page := 1; ; page++ {
		var h models.HistoryList
		f.Do("GET", fmt.Sprintf("/api/1.0/acts/%s/history?limit=100&page=%d", a.Uuid, page), f.tok, nil).Status(t, http.StatusOK).Decode(t, &h)
		hist = append(hist, h.Data...)
		if len(h.Data) < 100 {
			break
		}
	}
	for _, d := range got.Data {
		if !d.ExternalDataField {
			continue
		}
		var changes int64
		var last *string
		for _, e := range hist {
			if e.DataPointId != nil && *e.DataPointId == d.Id && (e.Kind == models.HistoryValueAccepted || e.Kind == models.HistoryValueEdited) {
				changes++
				last = e.NewValue
			}
		}
		if d.Revision != changes {
			t.Errorf("%s: revision %d, but %d value changes in the history", d.TemplateFieldKey, d.Revision, changes)
		}
		if strp(d.Value) != strp(last) {
			t.Errorf("%s: value %s, but the history's last change set %s", d.TemplateFieldKey, strp(d.Value), strp(last))
		}
	}
	return got, hist
}

// 50 goroutines send conflicting results for the same awaiting field, half
// through the single PUT and half through the bulk PUT; several send the
// same value. Exactly one value wins: every sender of that value gets 200
// (the first applies it, the rest are identical re-sends), everyone else
// 409, and the field changed exactly once.
func TestActDataRaceSameField(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		actstest.Webhook(t, env.DB, f.Ctx, f.member, outbox.ActFetchData, "https://integration.example.com/hook")
		s := &scn{f: f, a: f.createAct(t, "race")}
		s.fr = f.requestFetch(t, s.a, "revenue")

		const n = 50
		codes := make([]int, n)
		values := make([]string, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			values[i] = fmt.Sprintf("%d.00", 100+i%7)
			mode := "single"
			if i%2 == 1 {
				mode = "bulk"
			}
			wg.Go(func() {
				<-start
				codes[i] = s.correlated(t, mode, item{field: "revenue", value: val(values[i])}).Code
			})
		}
		close(start)
		wg.Wait()

		got, hist := checkInvariants(t, f, s.a)
		rev := dpByKey(t, got, "revenue")
		if rev.Value == nil || rev.Revision != 1 || strp(rev.SourceValue) != strp(rev.Value) || rev.Fetch.State != models.FetchStateAccepted {
			t.Fatalf("revenue after the race = %+v (fetch %+v)", rev, rev.Fetch)
		}
		winner := *rev.Value
		var ok, conflict int
		for i, c := range codes {
			switch {
			case c == http.StatusOK && values[i] == winner:
				ok++
			case c == http.StatusConflict && values[i] != winner:
				conflict++
			default:
				t.Errorf("sender %d of %s got %d (winner %s)", i, values[i], c, winner)
			}
		}
		accepted := 0
		for _, e := range hist {
			if e.Kind == models.HistoryValueAccepted {
				accepted++
			}
		}
		if accepted != 1 {
			t.Errorf("%d value_accepted entries, want 1", accepted)
		}
		t.Logf("winner %s: %d × 200, %d × 409", winner, ok, conflict)
	})
}

// Two bulk calls overlapping in one field (rating) race, many times over on
// different acts at once. One applies entirely, the other gets 409 and
// applies nothing; never a mix.
func TestActDataRaceOverlappingBulk(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		actstest.Webhook(t, env.DB, f.Ctx, f.member, outbox.ActFetchData, "https://integration.example.com/hook")
		const rounds = 12
		scns := make([]*scn, rounds)
		for i := range scns {
			scns[i] = &scn{f: f, a: f.createAct(t, fmt.Sprint("overlap ", i))}
			scns[i].fr = f.requestFetch(t, scns[i].a, "revenue", "rating", "owners", "employees")
		}
		first := []item{{field: "revenue", value: val("1")}, {field: "rating", value: val("A")}}
		second := []item{{field: "rating", value: val("B")}, {field: "owners", value: val("[]")}, {field: "employees", value: val("42")}}
		codes := make([][2]int, rounds)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, s := range scns {
			wg.Go(func() { <-start; codes[i][0] = s.correlated(t, "bulk", first...).Code })
			wg.Go(func() { <-start; codes[i][1] = s.correlated(t, "bulk", second...).Code })
		}
		close(start)
		wg.Wait()

		wins := [2]int{}
		for i, s := range scns {
			got, _ := checkInvariants(t, f, s.a)
			vals := map[string]string{}
			for _, k := range []string{"revenue", "rating", "owners", "employees"} {
				vals[k] = strp(dpByKey(t, got, k).Value)
			}
			a := vals["revenue"] == "=1.00" && vals["rating"] == "=A" && vals["owners"] == "<nil>" && vals["employees"] == "<nil>"
			b := vals["revenue"] == "<nil>" && vals["rating"] == "=B" && vals["owners"] == "=[]" && vals["employees"] == "=42"
			switch {
			case a && codes[i] == [2]int{200, 409}:
				wins[0]++
			case b && codes[i] == [2]int{409, 200}:
				wins[1]++
			default:
				t.Errorf("round %d: codes %v, values %v: neither call applied entirely", i, codes[i], vals)
			}
			var fr models.FetchRequest
			f.Do("GET", "/api/1.0/acts/"+s.a.Uuid.String()+"/fetch-requests/"+s.fr.Id.String(), f.tok, nil).Status(t, http.StatusOK).Decode(t, &fr)
			awaiting := 0
			for _, ff := range fr.Fields {
				if ff.State == models.FetchStateAwaiting {
					awaiting++
				}
			}
			if want := map[bool]int{true: 2, false: 1}[a]; awaiting != want {
				t.Errorf("round %d: %d fields still awaiting, want %d", i, awaiting, want)
			}
		}
		t.Logf("first call won %d, second %d of %d rounds", wins[0], wins[1], rounds)
	})
}

// Ordinary edits race correlated results for the same field: whatever the
// order, the history explains the value and the revision, and a result
// that lost to an edit was refused, never applied over it.
func TestActDataRaceEditVersusResult(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		actstest.Webhook(t, env.DB, f.Ctx, f.member, outbox.ActFetchData, "https://integration.example.com/hook")
		const rounds = 10
		for i := range rounds {
			s := &scn{f: f, a: f.createAct(t, fmt.Sprint("edit race ", i))}
			s.fr = f.requestFetch(t, s.a, "revenue")
			var edit, result int
			start := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				<-start
				edit = s.put(t, f.TenantEnv, f.tok, "single", nil, item{field: "revenue", value: val("5")}).Code
			})
			wg.Go(func() { <-start; result = s.correlated(t, "bulk", item{field: "revenue", value: val("9")}).Code })
			close(start)
			wg.Wait()
			got, hist := checkInvariants(t, f, s.a)
			rev := dpByKey(t, got, "revenue")
			if edit != http.StatusOK || strp(rev.Value) != "=5.00" {
				t.Fatalf("round %d: edit %d, value %s; the edit always applies and is the last word", i, edit, strp(rev.Value))
			}
			var kinds []string
			for _, e := range hist {
				if e.DataPointId != nil {
					kinds = append(kinds, string(e.Kind))
				}
			}
			switch result {
			case http.StatusOK: // the result came first, the edit after it
				if strings.Join(kinds, ",") != "value_accepted,value_edited" || rev.Revision != 2 || strp(rev.SourceValue) != "=9.00" {
					t.Errorf("round %d: result first, but history %v, revision %d", i, kinds, rev.Revision)
				}
			case http.StatusConflict: // the edit came first; the result is stale
				if strings.Join(kinds, ",") != "value_edited" || rev.Revision != 1 || rev.SourceValue != nil || rev.Fetch.State != models.FetchStateAwaiting {
					t.Errorf("round %d: edit first, but history %v, revision %d", i, kinds, rev.Revision)
				}
			default:
				t.Errorf("round %d: result got %d", i, result)
			}
		}
	})
}

// A newer fetch request races a result for the older one: the result is
// either accepted before the new request (which then awaits a fresh value
// on top of it) or refused as superseded; in both cases the newer request
// can be answered.
func TestActDataRaceSupersedeVersusResult(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		actstest.Webhook(t, env.DB, f.Ctx, f.member, outbox.ActFetchData, "https://integration.example.com/hook")
		for i := range 10 {
			s := &scn{f: f, a: f.createAct(t, fmt.Sprint("supersede race ", i))}
			s.fr = f.requestFetch(t, s.a, "revenue")
			var result int
			var newer models.FetchRequest
			start := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() { <-start; result = s.correlated(t, "single", item{field: "revenue", value: val("1")}).Code })
			wg.Go(func() {
				<-start
				r := f.Do("POST", "/api/1.0/acts/"+s.a.Uuid.String()+"/fetch-requests", f.tok,
					map[string]any{"data_point_ids": f.ids(t, s.a, "revenue")})
				if r.Code != http.StatusCreated {
					t.Errorf("round %d: newer request got %d", i, r.Code)
					return
				}
				r.Decode(t, &newer)
			})
			close(start)
			wg.Wait()
			st := s.state(t)
			old := frField(t, st.fr, "revenue").State
			rev := dpByKey(t, st.act, "revenue")
			switch result {
			case http.StatusOK:
				if old != models.FetchStateAccepted || strp(rev.Value) != "=1.00" || rev.Revision != 1 {
					t.Errorf("round %d: result accepted, but old field %s, value %s rev %d", i, old, strp(rev.Value), rev.Revision)
				}
			case http.StatusConflict:
				if old != models.FetchStateSuperseded || rev.Value != nil || rev.Revision != 0 {
					t.Errorf("round %d: result refused, but old field %s, value %s rev %d", i, old, strp(rev.Value), rev.Revision)
				}
			default:
				t.Fatalf("round %d: result got %d", i, result)
			}
			if rev.Fetch == nil || rev.Fetch.FetchRequestId != newer.Id || rev.Fetch.State != models.FetchStateAwaiting {
				t.Errorf("round %d: latest fetch = %+v, want the newer request awaiting", i, rev.Fetch)
			}
			s.fr = newer
			s.correlated(t, "bulk", item{field: "revenue", value: val("2")}).Status(t, http.StatusOK)
			checkInvariants(t, f, s.a)
		}
	})
}
