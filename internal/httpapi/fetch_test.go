package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/acts/actstest"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// testClock is the injectable clock of the acts and fetch flow.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *testClock { return &testClock{now: time.Now().UTC().Truncate(time.Second)} }

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *testClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func withClock(c *testClock) apitest.Option {
	return apitest.WithApp(app.WithClock(c.Now))
}

func (f *actFixture) ids(t *testing.T, a models.Act, keys ...string) []int64 {
	t.Helper()
	out := make([]int64, len(keys))
	for i, k := range keys {
		out[i] = dpByKey(t, a, k).Id
	}
	return out
}

func (f *actFixture) requestFetch(t *testing.T, a models.Act, keys ...string) models.FetchRequest {
	t.Helper()
	var fr models.FetchRequest
	f.Do("POST", "/api/1.0/acts/"+a.Uuid.String()+"/fetch-requests", f.tok, map[string]any{"data_point_ids": f.ids(t, a, keys...)}).
		Status(t, http.StatusCreated).Decode(t, &fr)
	return fr
}

func (f *actFixture) getAct(t *testing.T, a models.Act) models.Act {
	t.Helper()
	var got models.Act
	f.Do("GET", "/api/1.0/acts/"+a.Uuid.String(), f.tok, nil).Status(t, http.StatusOK).Decode(t, &got)
	return got
}

func frField(t *testing.T, fr models.FetchRequest, key string) models.FetchRequestField {
	t.Helper()
	for _, f := range fr.Fields {
		if f.TemplateFieldKey == key {
			return f
		}
	}
	t.Fatalf("fetch request has no field %q", key)
	return models.FetchRequestField{}
}

func TestFetchRequestCreate(t *testing.T) {
	clk := newClock()
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		hook := actstest.Webhook(t, env.DB, f.Ctx, f.member, outbox.ActFetchData, "https://integration.example.com/hook")
		a := f.createAct(t, "Review")
		before := events(t, env, f.Tenant.ID)

		// The client's name changed since the act was created: the built-in
		// refresh picks it up at once.
		if err := env.DB.Exec("UPDATE clients SET company_name = 'Acme Holding AB' WHERE tenant_id = ? AND id = ?", f.Tenant.ID, f.client.ID).Error; err != nil {
			t.Fatal(err)
		}
		fr := f.requestFetch(t, a, "revenue", "owners", "company", "limit")
		if fr.ActUuid != a.Uuid || fr.Status != models.FetchRequestPending || len(fr.Fields) != 4 {
			t.Fatalf("fetch request = %+v", fr)
		}
		if !fr.RequestedAt.Equal(clk.Now()) || !fr.ExpiresAt.Equal(fr.RequestedAt.Add(12*time.Minute)) {
			t.Errorf("requested_at %s expires_at %s, want now and now+12m (the configured window)", fr.RequestedAt, fr.ExpiresAt)
		}
		for key, want := range map[string]models.FieldFetchState{"revenue": models.FetchStateAwaiting, "owners": models.FetchStateAwaiting,
			"company": models.FetchStateAccepted, "limit": models.FetchStateAccepted} {
			ff := frField(t, fr, key)
			if ff.State != want || ff.ExternalDataField != (want == models.FetchStateAwaiting) {
				t.Errorf("field %s = %+v, want %s", key, ff, want)
			}
		}

		got := f.getAct(t, a)
		company := dpByKey(t, got, "company")
		if company.Value == nil || *company.Value != "Acme Holding AB" || *company.SourceValue != "Acme Holding AB" || company.Revision != 1 {
			t.Errorf("company after refresh = %+v", company)
		}
		if company.Fetch == nil || company.Fetch.State != models.FetchStateAccepted || company.Fetch.FetchRequestId != fr.Id {
			t.Errorf("company fetch = %+v", company.Fetch)
		}
		// The credit limit did not change: no new revision, still accepted.
		if l := dpByKey(t, got, "limit"); l.Revision != 0 || l.Fetch == nil || l.Fetch.State != models.FetchStateAccepted {
			t.Errorf("limit after refresh = %+v", l)
		}
		if r := dpByKey(t, got, "revenue"); r.Fetch == nil || r.Fetch.State != models.FetchStateAwaiting || !r.Fetch.ExpiresAt.Equal(fr.ExpiresAt) {
			t.Errorf("revenue fetch = %+v", r.Fetch)
		}
		if r := dpByKey(t, got, "rating"); r.Fetch != nil {
			t.Errorf("unselected rating has fetch %+v", r.Fetch)
		}

		// One act.fetch_data event with the whole selected set as snapshots.
		evs := events(t, env, f.Tenant.ID)
		var fetchEvents []eventRow
		for _, e := range evs {
			if e.Kind == outbox.ActFetchData {
				fetchEvents = append(fetchEvents, e)
			}
		}
		// act.fetch_data, and act.data_updated for the built-in company field
		// (the client was renamed since the act was created).
		dataEvents := 0
		for _, e := range evs {
			if e.Kind == outbox.ActDataUpdated {
				dataEvents++
			}
		}
		if len(evs) != len(before)+2 || len(fetchEvents) != 1 || dataEvents != 1 {
			t.Fatalf("events = %+v", evs)
		}
		ev := fetchEvents[0]
		var p models.ActFetchDataPayload
		if err := json.Unmarshal([]byte(ev.Payload), &p); err != nil {
			t.Fatal(err)
		}
		if p.RequestId != fr.Id || !p.ExpiresAt.Equal(fr.ExpiresAt) || !p.RequestedAt.Equal(fr.RequestedAt) ||
			p.Act.Uuid != a.Uuid || p.Act.ClientId != f.client.ID || p.Act.TemplateId != f.tpl.ID || p.Act.Title != "Review" {
			t.Errorf("payload = %+v", p)
		}
		if len(p.Fields) != 4 {
			t.Fatalf("payload has %d fields, want 4", len(p.Fields))
		}
		for _, fd := range p.Fields {
			dp := dpByKey(t, got, fd.TemplateFieldKey)
			if fd.Id != dp.Id || fd.TemplateFieldId != dp.TemplateFieldId || fd.Type != dp.Type || fd.Source != dp.Source ||
				fd.ExternalDataField != dp.ExternalDataField || fd.TemplateFieldName != dp.TemplateFieldName {
				t.Errorf("field definition %+v does not match data point %+v", fd, dp)
			}
		}
		owners := p.Fields[1]
		if owners.TemplateFieldKey != "owners" || owners.Options == nil || owners.Options.Columns == nil || len(*owners.Options.Columns) != 2 {
			t.Errorf("owners definition lacks its effective columns: %+v", owners)
		}
		var evExpires time.Time
		if err := env.DB.Table("events").Where("tenant_id = ? AND id = ?", f.Tenant.ID, ev.ID).Pluck("expires_at", &evExpires).Error; err != nil {
			t.Fatal(err)
		}
		if !evExpires.Equal(fr.ExpiresAt) {
			t.Errorf("event expires_at = %s, want %s", evExpires, fr.ExpiresAt)
		}
		if n := countRows(t, env, "delivery_log", "tenant_id = ? AND event_id = ? AND webhook_id = ?", f.Tenant.ID, ev.ID, hook); n != 1 {
			t.Errorf("%d deliveries of act.fetch_data, want 1", n)
		}

		// History: fetch_requested by the user; built-ins by the system.
		var h models.HistoryList
		f.Do("GET", "/api/1.0/acts/"+a.Uuid.String()+"/history", f.tok, nil).Status(t, http.StatusOK).Decode(t, &h)
		var sys int
		for _, e := range h.Data {
			switch e.Kind {
			case models.HistoryFetchRequested:
				if e.Actor.Type != models.ActorUser || e.FetchRequestId == nil || *e.FetchRequestId != fr.Id {
					t.Errorf("fetch_requested entry = %+v", e)
				}
			case models.HistoryValueAccepted:
				sys++
				if e.Actor.Type != models.ActorSystem || e.FetchRequestId == nil || *e.FetchRequestId != fr.Id {
					t.Errorf("built-in entry = %+v", e)
				}
			}
		}
		if sys != 2 {
			t.Errorf("%d built-in history entries, want 2", sys)
		}

		// GET reads it back.
		var again models.FetchRequest
		f.Do("GET", "/api/1.0/acts/"+a.Uuid.String()+"/fetch-requests/"+fr.Id.String(), f.tok, nil).Status(t, http.StatusOK).Decode(t, &again)
		if again.Id != fr.Id || again.Status != models.FetchRequestPending || len(again.Fields) != 4 || frField(t, again, "revenue").State != models.FetchStateAwaiting {
			t.Errorf("GET fetch request = %+v", again)
		}

		// A newer request supersedes the older one's awaiting fields.
		fr2 := f.requestFetch(t, a, "revenue", "rating")
		f.Do("GET", "/api/1.0/acts/"+a.Uuid.String()+"/fetch-requests/"+fr.Id.String(), f.tok, nil).Status(t, http.StatusOK).Decode(t, &again)
		if frField(t, again, "revenue").State != models.FetchStateSuperseded || frField(t, again, "owners").State != models.FetchStateAwaiting {
			t.Errorf("older request after a newer one = %+v", again.Fields)
		}
		got = f.getAct(t, a)
		if r := dpByKey(t, got, "revenue"); r.Fetch == nil || r.Fetch.FetchRequestId != fr2.Id || r.Fetch.State != models.FetchStateAwaiting {
			t.Errorf("revenue's latest fetch = %+v, want the newer request", r.Fetch)
		}

		// Expiry is derived at read time.
		clk.Advance(12*time.Minute + time.Second)
		f.Do("GET", "/api/1.0/acts/"+a.Uuid.String()+"/fetch-requests/"+fr2.Id.String(), f.tok, nil).Status(t, http.StatusOK).Decode(t, &again)
		if again.Status != models.FetchRequestExpired || frField(t, again, "revenue").State != models.FetchStateExpired {
			t.Errorf("expired request = %+v", again)
		}
		got = f.getAct(t, a)
		if r := dpByKey(t, got, "rating"); r.Fetch == nil || r.Fetch.State != models.FetchStateExpired {
			t.Errorf("rating fetch after expiry = %+v", r.Fetch)
		}
		if c := dpByKey(t, got, "company"); c.Fetch.State != models.FetchStateAccepted {
			t.Errorf("accepted built-in reads %s after expiry", c.Fetch.State)
		}

		// Built-ins only: completed at once, no act.fetch_data; the one event
		// is fetch_request.completed (the values were already right).
		n := len(events(t, env, f.Tenant.ID))
		fr3 := f.requestFetch(t, a, "company", "opened")
		evs = events(t, env, f.Tenant.ID)
		if fr3.Status != models.FetchRequestCompleted || len(evs) != n+1 || evs[len(evs)-1].Kind != outbox.FetchRequestCompleted {
			t.Errorf("built-in-only request = %+v (events %d → %d)", fr3, n, len(evs))
		}
	}, withClock(clk), apitest.WithConfig(func(c *config.Config) { c.FetchWindow = 12 * time.Minute }))
}

func TestFetchRequestRefused(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		a := f.createAct(t, "Review")
		other := f.createAct(t, "Other")
		path := "/api/1.0/acts/" + a.Uuid.String() + "/fetch-requests"
		nothingCreated := func(t *testing.T) {
			t.Helper()
			if n := countRows(t, env, "fetch_requests", "tenant_id = ?", f.Tenant.ID); n != 0 {
				t.Errorf("%d fetch requests created by refused calls", n)
			}
			if n := countRows(t, env, "events", "tenant_id = ? AND kind = ?", f.Tenant.ID, outbox.ActFetchData); n != 0 {
				t.Errorf("%d act.fetch_data events written by refused calls", n)
			}
		}
		refuse := func(ids []int64, key string) {
			t.Helper()
			e := f.Do("POST", path, f.tok, map[string]any{"data_point_ids": ids}).Status(t, http.StatusBadRequest).Err(t)
			if len(e.Errors[key]) == 0 {
				t.Errorf("ids %v: errors = %v, want %s", ids, e.Errors, key)
			}
		}
		// No registration at all, an inactive one, an http one and one of a
		// user who no longer exists: none is eligible.
		refuse(f.ids(t, a, "revenue"), "webhooks")
		h := actstest.Webhook(t, env.DB, f.Ctx, f.member, outbox.ActFetchData, "https://integration.example.com/hook")
		env.DB.Exec("UPDATE webhooks SET active = false WHERE tenant_id = ? AND id = ?", f.Tenant.ID, h)
		actstest.Webhook(t, env.DB, f.Ctx, f.member, outbox.ActFetchData, "http://integration.example.com/hook")
		actstest.Webhook(t, env.DB, f.Ctx, 9999, outbox.ActFetchData, "https://integration.example.com/hook")
		actstest.Webhook(t, env.DB, f.Ctx, f.member, outbox.ActCreated, "https://integration.example.com/hook")
		refuse(f.ids(t, a, "revenue", "company"), "webhooks")
		nothingCreated(t)

		actstest.Webhook(t, env.DB, f.Ctx, f.member, outbox.ActFetchData, "https://integration.example.com/hook")
		refuse(f.ids(t, a, "revenue", "note"), "data_point_ids[1]")                                    // manual field
		refuse([]int64{f.ids(t, a, "revenue")[0], f.ids(t, other, "revenue")[0]}, "data_point_ids[1]") // another act's
		refuse([]int64{99999}, "data_point_ids[0]")
		nothingCreated(t)
		// Schema: empty list, duplicates.
		f.Do("POST", path, f.tok, map[string]any{"data_point_ids": []int64{}}).Status(t, http.StatusBadRequest)
		ids := f.ids(t, a, "revenue")
		f.Do("POST", path, f.tok, map[string]any{"data_point_ids": []int64{ids[0], ids[0]}}).Status(t, http.StatusBadRequest)
		// Permissions, other tenants, unknown requests.
		f.Do("POST", path, f.Token(f.viewer, auth.ScopeActsRead, auth.ScopeActsWrite), map[string]any{"data_point_ids": ids}).Status(t, http.StatusForbidden)
		f.Do("POST", path, f.Token(f.member, auth.ScopeActsRead), map[string]any{"data_point_ids": ids}).Status(t, http.StatusForbidden)
		beta := newActFixture(t, env, "beta")
		beta.Do("POST", path, beta.tok, map[string]any{"data_point_ids": ids}).Status(t, http.StatusNotFound)
		nothingCreated(t)

		// A final act is not editable.
		f.Do("POST", "/api/1.0/acts/"+other.Uuid.String()+"/finalize", f.tok, nil).Status(t, http.StatusOK)
		e := f.Do("POST", "/api/1.0/acts/"+other.Uuid.String()+"/fetch-requests", f.tok,
			map[string]any{"data_point_ids": f.ids(t, other, "revenue")}).Status(t, http.StatusBadRequest).Err(t)
		if len(e.Errors["status"]) == 0 {
			t.Errorf("final act: errors = %v, want status", e.Errors)
		}
		nothingCreated(t)

		fr := f.requestFetch(t, a, "revenue")
		f.Do("GET", "/api/1.0/acts/"+other.Uuid.String()+"/fetch-requests/"+fr.Id.String(), f.tok, nil).Status(t, http.StatusNotFound)
		beta.Do("GET", "/api/1.0/acts/"+a.Uuid.String()+"/fetch-requests/"+fr.Id.String(), beta.tok, nil).Status(t, http.StatusNotFound)
		f.Do("GET", "/api/1.0/acts/"+a.Uuid.String()+"/fetch-requests/"+a.Uuid.String(), f.tok, nil).Status(t, http.StatusNotFound)
		f.Do("GET", "/api/1.0/acts/"+a.Uuid.String()+"/fetch-requests/"+fr.Id.String(), f.Token(f.viewer, auth.ScopeActsRead), nil).Status(t, http.StatusOK)
		f.Do("GET", "/api/1.0/acts/"+a.Uuid.String()+"/fetch-requests/"+fr.Id.String(), f.Token(f.viewer, auth.ScopeClientsRead), nil).Status(t, http.StatusForbidden)
		_ = fmt.Sprint
	})
}
