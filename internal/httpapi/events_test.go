package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

type eventPage struct {
	Data    []models.Event `json:"data"`
	HasMore bool           `json:"has_more"`
}

func listEvents(t *testing.T, te *apitest.TenantEnv, tok string, q url.Values) eventPage {
	t.Helper()
	var p eventPage
	te.Do("GET", "/api/1.0/events?"+q.Encode(), tok, nil).Status(t, http.StatusOK).Decode(t, &p)
	return p
}

// GET /events lists what was emitted, newest first, as the envelope with
// the stored id and data; GET /events/{id} returns one. Another tenant's
// event is 404 and never listed; a token without events:read is 403.
func TestEventsAPI(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		a1 := f.createAct(t, "First")
		a2 := f.createAct(t, "Second")
		tok := f.Token(f.viewer, auth.ScopeEventsRead, auth.ScopeActsRead)

		rows := events(t, env, f.Tenant.ID)
		if len(rows) != 2 {
			t.Fatalf("events rows %+v", rows)
		}
		p := listEvents(t, f.TenantEnv, tok, nil)
		if len(p.Data) != 2 || p.HasMore {
			t.Fatalf("list %+v", p)
		}
		byID := map[string]eventRow{}
		for _, r := range rows {
			byID[r.ID] = r
		}
		for i, want := range []string{a2.Uuid.String(), a1.Uuid.String()} { // newest first
			e := p.Data[i]
			r, ok := byID[e.Id.String()]
			if !ok || string(e.Event) != r.Kind || e.Event != outbox.ActCreated {
				t.Fatalf("event %d: %+v; rows %+v", i, e, rows)
			}
			var stored, got any
			if err := json.Unmarshal([]byte(r.Payload), &stored); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(e.Data)
			_ = json.Unmarshal(b, &got)
			if fmt.Sprint(stored) != fmt.Sprint(got) {
				t.Fatalf("data differs from the stored payload:\n%s\n%s", r.Payload, b)
			}
			if act, _ := e.Data["act"].(map[string]any); act["uuid"] != want {
				t.Fatalf("event %d is about %v, want %s", i, act["uuid"], want)
			}
			var one models.Event
			f.Do("GET", "/api/1.0/events/"+e.Id.String(), tok, nil).Status(t, http.StatusOK).Decode(t, &one)
			if one.Id != e.Id || one.Event != e.Event || !one.OccurredAt.Equal(e.OccurredAt) {
				t.Fatalf("get %+v, list %+v", one, e)
			}
		}

		// Filters.
		if p := listEvents(t, f.TenantEnv, tok, url.Values{"type": {outbox.ActDuplicated}}); len(p.Data) != 0 {
			t.Fatalf("type filter %+v", p)
		}
		if p := listEvents(t, f.TenantEnv, tok, url.Values{"created_after": {time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}}); len(p.Data) != 0 {
			t.Fatalf("created_after filter %+v", p)
		}
		if p := listEvents(t, f.TenantEnv, tok, url.Values{"created_before": {time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, "type": {outbox.ActCreated}}); len(p.Data) != 2 {
			t.Fatalf("created_before filter %+v", p)
		}

		// Scope and tenant isolation.
		f.Do("GET", "/api/1.0/events", f.Token(f.admin, auth.ScopeActsRead, auth.ScopeWebhooksRead), nil).Status(t, http.StatusForbidden)
		f.Do("GET", "/api/1.0/events", "", nil).Status(t, http.StatusUnauthorized)
		other := env.Tenant("globex")
		otok := other.Token(other.User(auth.RoleAdmin), auth.ScopeEventsRead, auth.ScopeActsRead)
		other.Do("GET", "/api/1.0/events/"+p.Data[0].Id.String(), otok, nil).Status(t, http.StatusNotFound)
		if op := listEvents(t, other, otok, nil); len(op.Data) != 0 {
			t.Fatalf("another tenant lists %+v", op)
		}
		other.Do("GET", "/api/1.0/events?starting_after="+p.Data[0].Id.String(), otok, nil).Status(t, http.StatusBadRequest)
		f.Do("GET", "/api/1.0/events?starting_after="+p.Data[0].Id.String()+"&ending_before="+p.Data[1].Id.String(), tok, nil).Status(t, http.StatusBadRequest)
	})
}

// Paging by cursor is stable while events are written: walking back with
// starting_after from a first page, and forward with ending_before from the
// oldest event, each event is seen exactly once although acts are created
// concurrently all the while.
func TestEventsPagingWhileWriting(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		for i := range 12 {
			f.createAct(t, "Before "+strconv.Itoa(i))
		}
		tok := f.Token(f.member, auth.ScopeEventsRead, auth.ScopeActsRead)
		first := listEvents(t, f.TenantEnv, tok, url.Values{"limit": {"5"}})
		oldestSeen := first.Data[len(first.Data)-1].Id

		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		written := 0
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				f.createAct(t, "During "+strconv.Itoa(written))
				written++
			}
		}()

		// Backwards: the 12 written before, once each, despite new heads.
		seen := map[string]int{}
		for _, e := range first.Data {
			seen[e.Id.String()]++
		}
		cur := oldestSeen
		for {
			p := listEvents(t, f.TenantEnv, tok, url.Values{"limit": {"5"}, "starting_after": {cur.String()}})
			for _, e := range p.Data {
				seen[e.Id.String()]++
			}
			if !p.HasMore {
				break
			}
			cur = p.Data[len(p.Data)-1].Id
		}
		if len(seen) != 12 {
			t.Fatalf("walking back saw %d events, want 12", len(seen))
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("event %s seen %d times", id, n)
			}
		}

		// Forwards from the oldest (the catching-up loop): every event once,
		// in order, until the writer has stopped and the list is drained.
		var oldest models.Event
		for _, e := range listEvents(t, f.TenantEnv, tok, url.Values{"limit": {"100"}}).Data {
			oldest = e
		}
		fwd := map[string]int{oldest.Id.String(): 1}
		last := oldest.Id
		stopped := false
		for {
			p := listEvents(t, f.TenantEnv, tok, url.Values{"limit": {"3"}, "ending_before": {last.String()}})
			for i := len(p.Data) - 1; i >= 0; i-- { // oldest of the page first
				fwd[p.Data[i].Id.String()]++
				last = p.Data[i].Id
			}
			if len(p.Data) > 0 && p.Data[0].Id != last {
				t.Fatal("the newest of the page is not the last processed")
			}
			if !p.HasMore && len(p.Data) == 0 {
				if stopped {
					break
				}
				if len(fwd) >= 30 {
					close(stop)
					wg.Wait()
					stopped = true
				}
			}
		}
		total := len(events(t, env, f.Tenant.ID))
		if total != 12+written || len(fwd) != total {
			t.Fatalf("forward walk saw %d distinct events of %d (%d written during)", len(fwd), total, written)
		}
		for id, n := range fwd {
			if n != 1 {
				t.Fatalf("event %s seen %d times going forward", id, n)
			}
		}
	})
}

// A webhook.test event is listed only to those who may see its
// registration: its member owner, admins and viewers; another member
// neither lists nor gets it.
func TestEventsWebhookTestVisibility(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		tok := f.Token(f.member, auth.ScopeWebhooksRead, auth.ScopeWebhooksWrite, auth.ScopeEventsRead, auth.ScopeActsRead)
		var wh models.WebhookWithSecret
		f.Do("POST", "/api/1.0/webhooks", tok, map[string]any{"event": outbox.ActCreated, "target": "https://example.com/hook"}).
			Status(t, http.StatusCreated).Decode(t, &wh)
		var dl models.Delivery
		f.Do("POST", "/api/1.0/webhooks/"+strconv.FormatInt(wh.Id, 10)+"/test", tok, nil).Status(t, http.StatusAccepted).Decode(t, &dl)
		f.createAct(t, "Visible to all")

		for _, c := range []struct {
			name string
			tok  string
			want int
		}{
			{"owner", tok, 2},
			{"admin", f.Token(f.admin, auth.ScopeEventsRead, auth.ScopeActsRead, auth.ScopeWebhooksRead), 2},
			{"viewer", f.Token(f.viewer, auth.ScopeEventsRead, auth.ScopeActsRead, auth.ScopeWebhooksRead), 2},
			{"other member", f.Token(f.User(auth.RoleMember), auth.ScopeEventsRead, auth.ScopeActsRead, auth.ScopeWebhooksRead), 1},
		} {
			p := listEvents(t, f.TenantEnv, c.tok, nil)
			if len(p.Data) != c.want {
				t.Errorf("%s lists %d events, want %d", c.name, len(p.Data), c.want)
			}
			want := http.StatusOK
			if c.want == 1 {
				want = http.StatusNotFound
				if p.Data[0].Event != outbox.ActCreated {
					t.Errorf("%s lists %+v", c.name, p.Data[0])
				}
			}
			f.Do("GET", "/api/1.0/events/"+dl.EventId.String(), c.tok, nil).Status(t, want)
		}
	})
}
