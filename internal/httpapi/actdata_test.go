package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/acts/actstest"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

const testWindow = 30 * time.Minute

// scn is one scenario: a fresh act with a fetch request over the external
// fields revenue, rating and owners plus the built-in company (employees is
// external but not selected; note is manual).
type scn struct {
	f   *actFixture
	clk *testClock
	a   models.Act
	fr  models.FetchRequest
	// barriers is how many durability barriers (db.WaitDurable) the
	// request under test ran.
	barriers int64
}

func (s *scn) id(t *testing.T, key string) int64 { return dpByKey(t, s.a, key).Id }

// item is one result to send; key names a data point by its template key
// (resolved to an id unless byKey/byTF say otherwise).
type item struct {
	field       string
	value, err  *string
	byKey, byTF bool
	noID        bool
	extraID     *int64 // an explicit id, sent in addition (bulk only)
}

func val(v string) *string { return &v }

// put sends items as a single PUT (exactly one item) or a bulk PUT.
func (s *scn) put(t *testing.T, as *apitest.TenantEnv, tok, mode string, fr *string, items ...item) *apitest.Response {
	t.Helper()
	base := "/api/1.0/acts/" + s.a.Uuid.String() + "/data"
	if mode == "single" {
		if len(items) != 1 {
			t.Fatalf("single PUT with %d items", len(items))
		}
		it := items[0]
		body := map[string]any{}
		if fr != nil {
			body["fetch_request_id"] = *fr
		}
		if it.value != nil {
			body["value"] = *it.value
		}
		if it.err != nil {
			body["error"] = *it.err
		}
		id := int64(999999)
		if it.field != "" {
			id = s.id(t, it.field)
		}
		return as.Do("PUT", fmt.Sprintf("%s/%d", base, id), tok, body)
	}
	data := make([]map[string]any, len(items))
	for i, it := range items {
		m := map[string]any{}
		switch {
		case it.noID:
		case it.byKey:
			m["template_field_key"] = it.field
		case it.byTF:
			m["template_field_id"] = dpByKey(t, s.a, it.field).TemplateFieldId
		default:
			m["id"] = s.id(t, it.field)
		}
		if it.extraID != nil {
			m["id"] = *it.extraID
		}
		if it.value != nil {
			m["value"] = *it.value
		}
		if it.err != nil {
			m["error"] = *it.err
		}
		data[i] = m
	}
	body := map[string]any{"data": data}
	if fr != nil {
		body["fetch_request_id"] = *fr
	}
	return as.Do("PUT", base, tok, body)
}

// correlated sends items with the scenario's request as the member's app.
func (s *scn) correlated(t *testing.T, mode string, items ...item) *apitest.Response {
	t.Helper()
	fr := s.fr.Id.String()
	return s.put(t, s.f.TenantEnv, s.f.tok, mode, &fr, items...)
}

// edit is an ordinary edit (no fetch_request_id), always as a bulk PUT.
func (s *scn) edit(t *testing.T, field, value string) {
	t.Helper()
	s.put(t, s.f.TenantEnv, s.f.tok, "bulk", nil, item{field: field, value: val(value)}).Status(t, http.StatusOK)
}

// state is everything a write could change, for "nothing applied" checks.
type state struct {
	act     models.Act
	history int64
	fr      models.FetchRequest
}

func (s *scn) state(t *testing.T) state {
	t.Helper()
	var st state
	st.act = s.f.getAct(t, s.a)
	var h models.HistoryList
	s.f.Do("GET", "/api/1.0/acts/"+s.a.Uuid.String()+"/history?limit=1", s.f.tok, nil).Status(t, http.StatusOK).Decode(t, &h)
	st.history = h.Meta.Total
	s.f.Do("GET", "/api/1.0/acts/"+s.a.Uuid.String()+"/fetch-requests/"+s.fr.Id.String(), s.f.tok, nil).Status(t, http.StatusOK).Decode(t, &st.fr)
	return st
}

func (s *scn) lastHistory(t *testing.T) models.HistoryEntry {
	t.Helper()
	var h models.HistoryList
	s.f.Do("GET", "/api/1.0/acts/"+s.a.Uuid.String()+"/history?limit=100", s.f.tok, nil).Status(t, http.StatusOK).Decode(t, &h)
	return h.Data[len(h.Data)-1]
}

type putCase struct {
	name string
	// pre runs before the fetch request is made, setup after it.
	pre, setup func(t *testing.T, s *scn)
	items      func(s *scn) []item
	// send overrides how the items are sent (tokens, tenants, request ids).
	send  func(t *testing.T, s *scn, mode string, items []item) *apitest.Response
	want  int
	key   string // expected error key, in bulk form (data[0].value)
	check func(t *testing.T, s *scn, mode string, r *apitest.Response, before state)
	modes []string // default both
}

// singleKey maps a bulk error key to the single PUT's.
func singleKey(k string) string {
	switch {
	case k == "data[0]":
		return "data_id"
	case strings.HasPrefix(k, "data[0]."):
		return strings.TrimPrefix(k, "data[0].")
	}
	return k
}

func one(field string, value, errText *string) func(*scn) []item {
	return func(*scn) []item { return []item{{field: field, value: value, err: errText}} }
}

func acceptFirst(field, value string) func(t *testing.T, s *scn) {
	return func(t *testing.T, s *scn) {
		s.correlated(t, "bulk", item{field: field, value: val(value)}).Status(t, http.StatusOK)
	}
}

func reportFirst(field, errText string) func(t *testing.T, s *scn) {
	return func(t *testing.T, s *scn) {
		s.correlated(t, "bulk", item{field: field, err: val(errText)}).Status(t, http.StatusOK)
	}
}

// dataPoint decodes the written data point of a 200 (single or bulk).
func dataPoint(t *testing.T, mode string, r *apitest.Response, s *scn) models.DataPoint {
	t.Helper()
	if mode == "single" {
		var d models.DataPoint
		r.Decode(t, &d)
		return d
	}
	var b models.BulkDataResult
	r.Decode(t, &b)
	if len(b.Data) != 1 {
		t.Fatalf("bulk result has %d data points", len(b.Data))
	}
	return b.Data[0]
}

func unchangedSince(t *testing.T, s *scn, before state) {
	t.Helper()
	after := s.state(t)
	if !reflect.DeepEqual(before, after) {
		t.Errorf("a refused write changed state:\nbefore %+v\nafter  %+v", before, after)
	}
}

func putCases() []putCase {
	accepted := func(field, want string) func(t *testing.T, s *scn, mode string, r *apitest.Response, before state) {
		return func(t *testing.T, s *scn, mode string, r *apitest.Response, before state) {
			d := dataPoint(t, mode, r, s)
			prev := dpByKey(t, before.act, field)
			if d.Value == nil || *d.Value != want || d.SourceValue == nil || *d.SourceValue != want ||
				d.Revision != prev.Revision+1 || d.Fetch == nil || d.Fetch.State != models.FetchStateAccepted || d.Fetch.FetchRequestId != s.fr.Id {
				t.Errorf("data point = %+v (fetch %+v), want value %q accepted at revision %d", d, d.Fetch, want, prev.Revision+1)
			}
			h := s.lastHistory(t)
			if h.Kind != models.HistoryValueAccepted || h.Actor.Type != models.ActorApp || h.Actor.Id != "test-app" ||
				h.Actor.UserId == nil || *h.Actor.UserId != s.f.member || h.FetchRequestId == nil || *h.FetchRequestId != s.fr.Id ||
				h.DataPointId == nil || *h.DataPointId != d.Id || h.NewValue == nil || *h.NewValue != want || strp(h.OldValue) != strp(prev.Value) {
				t.Errorf("history entry = %+v", h)
			}
			if st := s.state(t); st.history != before.history+1 {
				t.Errorf("history grew by %d, want 1", st.history-before.history)
			}
			if s.barriers != 0 {
				t.Errorf("a write ran %d durability barriers; its own commit is one", s.barriers)
			}
		}
	}
	idempotent := func(t *testing.T, s *scn, mode string, r *apitest.Response, before state) {
		st := s.state(t)
		if st.history != before.history || !reflect.DeepEqual(st.act, before.act) {
			t.Errorf("identical re-send changed the act or its history (history %d → %d)", before.history, st.history)
		}
		// The answer confirms what an earlier commit stored, read by a
		// transaction that wrote nothing.
		if s.barriers != 1 {
			t.Errorf("an identical re-send ran %d durability barriers; want 1", s.barriers)
		}
	}
	long := strings.Repeat("é", 1000)
	return []putCase{
		// The contract's table of field moves, one row per line.
		{name: "row1 awaiting, value with matching request: accepted", items: one("revenue", val("1234.5"), nil),
			want: 200, check: accepted("revenue", "1234.50")},
		{name: "row2 awaiting, error with matching request: failed, previous value kept",
			pre: func(t *testing.T, s *scn) { s.edit(t, "revenue", "10") }, items: one("revenue", nil, val("registry timed out")), want: 200,
			check: func(t *testing.T, s *scn, mode string, r *apitest.Response, before state) {
				d := dataPoint(t, mode, r, s)
				if d.Value == nil || *d.Value != "10.00" || d.Revision != 1 || d.SourceValue != nil ||
					d.Fetch == nil || d.Fetch.State != models.FetchStateFailed || d.Fetch.Error == nil || *d.Fetch.Error != "registry timed out" {
					t.Errorf("data point after error = %+v (fetch %+v)", d, d.Fetch)
				}
				h := s.lastHistory(t)
				if h.Kind != models.HistoryFetchFailed || h.Error == nil || *h.Error != "registry timed out" || h.Actor.Type != models.ActorApp ||
					h.FetchRequestId == nil || *h.FetchRequestId != s.fr.Id || h.NewValue != nil {
					t.Errorf("history entry = %+v", h)
				}
				if f := frField(t, s.state(t).fr, "revenue"); f.State != models.FetchStateFailed || f.Error == nil {
					t.Errorf("request field = %+v", f)
				}
			}},
		{name: "row3 value accepted, identical value again: accepted again", setup: acceptFirst("revenue", "1234.5"),
			items: one("revenue", val("1234.50"), nil), want: 200, check: idempotent},
		{name: "row3 identical value again after expiry: still accepted again", setup: func(t *testing.T, s *scn) {
			acceptFirst("rating", "B")(t, s)
			s.clk.Advance(testWindow + time.Minute)
		}, items: one("rating", val("B"), nil), want: 200, check: idempotent},
		{name: "row4 value accepted, different value: 409", setup: acceptFirst("revenue", "1"),
			items: one("revenue", val("2"), nil), want: 409, key: "data[0]"},
		{name: "row4 value accepted, error: 409", setup: acceptFirst("revenue", "1"),
			items: one("revenue", nil, val("failed")), want: 409, key: "data[0]"},
		{name: "row5 error reported, identical error: accepted again", setup: reportFirst("rating", "not rated"),
			items: one("rating", nil, val("not rated")), want: 200, check: idempotent},
		{name: "row5 error reported, different error: 409", setup: reportFirst("rating", "not rated"),
			items: one("rating", nil, val("other")), want: 409, key: "data[0]"},
		{name: "row5 error reported, value: 409", setup: reportFirst("rating", "not rated"),
			items: one("rating", val("A"), nil), want: 409, key: "data[0]"},
		{name: "row6 not awaiting (superseded): 409", setup: func(t *testing.T, s *scn) { s.f.requestFetch(t, s.a, "revenue") },
			items: one("revenue", val("5"), nil), want: 409, key: "data[0]"},
		{name: "row6 changed since the request (ordinary edit): 409", setup: func(t *testing.T, s *scn) { s.edit(t, "revenue", "7") },
			items: one("revenue", val("5"), nil), want: 409, key: "data[0]"},
		{name: "row6 request expired: 409", setup: func(t *testing.T, s *scn) { s.clk.Advance(testWindow + time.Second) },
			items: one("revenue", val("5"), nil), want: 409, key: "data[0]"},
		{name: "row6 request expired exactly at expires_at: 409", setup: func(t *testing.T, s *scn) { s.clk.Advance(testWindow) },
			items: one("revenue", val("5"), nil), want: 409, key: "data[0]"},
		{name: "row1 one microsecond before expires_at: accepted", setup: func(t *testing.T, s *scn) { s.clk.Advance(testWindow - time.Microsecond) },
			items: one("revenue", val("5"), nil), want: 200, check: accepted("revenue", "5.00")},
		{name: "row6 request expired, error: 409", setup: func(t *testing.T, s *scn) { s.clk.Advance(testWindow + time.Second) },
			items: one("revenue", nil, val("late")), want: 409, key: "data[0]"},
		{name: "row6 bulk with one conflicting item applies nothing", setup: acceptFirst("revenue", "1"), modes: []string{"bulk"},
			items: func(*scn) []item {
				return []item{{field: "rating", value: val("A")}, {field: "owners", value: val(`[]`)}, {field: "revenue", value: val("2")}}
			}, want: 409, key: "data[2]"},
		{name: "row6 bulk with an expired request applies nothing", modes: []string{"bulk"},
			setup: func(t *testing.T, s *scn) { s.clk.Advance(testWindow + time.Second) },
			items: func(*scn) []item {
				return []item{{field: "rating", value: val("A")}, {field: "revenue", value: val("2")}}
			},
			want: 409, key: "data[1]"},

		// Conditions of row 1: act editable, caller has access.
		{name: "final act: 400 errors.status", setup: func(t *testing.T, s *scn) {
			s.f.Do("POST", "/api/1.0/acts/"+s.a.Uuid.String()+"/finalize", s.f.tok, nil).Status(t, http.StatusOK)
		}, items: one("revenue", val("1"), nil), want: 400, key: "status"},
		{name: "viewer: 403", items: one("revenue", val("1"), nil), want: 403,
			send: func(t *testing.T, s *scn, mode string, items []item) *apitest.Response {
				fr := s.fr.Id.String()
				return s.put(t, s.f.TenantEnv, s.f.Token(s.f.viewer, auth.ScopeActsRead, auth.ScopeActsWrite), mode, &fr, items...)
			}},
		{name: "token without acts:write: 403", items: one("revenue", val("1"), nil), want: 403,
			send: func(t *testing.T, s *scn, mode string, items []item) *apitest.Response {
				fr := s.fr.Id.String()
				return s.put(t, s.f.TenantEnv, s.f.Token(s.f.member, auth.ScopeActsRead), mode, &fr, items...)
			}},
		{name: "another tenant's act: 404", items: one("revenue", val("1"), nil), want: 404,
			send: func(t *testing.T, s *scn, mode string, items []item) *apitest.Response {
				beta := s.f.Env.Tenant(fmt.Sprintf("beta%d", time.Now().UnixNano()%1e9))
				u := beta.User(auth.RoleAdmin)
				fr := s.fr.Id.String()
				return s.put(t, beta, beta.Token(u, auth.AllScopes...), mode, &fr, items...)
			}},
		{name: "unauthenticated: 401", items: one("revenue", val("1"), nil), want: 401,
			send: func(t *testing.T, s *scn, mode string, items []item) *apitest.Response {
				fr := s.fr.Id.String()
				return s.put(t, s.f.TenantEnv, "", mode, &fr, items...)
			}},

		// 422: validation, nothing applied.
		{name: "422 value and error", items: one("revenue", val("1"), val("x")), want: 422, key: "data[0].value"},
		{name: "422 neither value nor error", items: one("revenue", nil, nil), want: 422, key: "data[0].value"},
		{name: "422 error over 1000 characters", items: one("revenue", nil, val(long+"x")), want: 422, key: "data[0].error"},
		{name: "1000-character error is accepted", items: one("revenue", nil, val(long)), want: 200},
		{name: "422 empty error", items: one("revenue", nil, val("")), want: 422, key: "data[0].error"},
		{name: "422 NUL in error", items: one("revenue", nil, val("down\x00")), want: 422, key: "data[0].error"},
		{name: "422 NUL in value", items: one("rating", val("A\x00"), nil), want: 422, key: "data[0].value"},
		{name: "422 invalid currency value", items: one("revenue", val("12,5"), nil), want: 422, key: "data[0].value"},
		{name: "422 value not a choice", items: one("rating", val("D"), nil), want: 422, key: "data[0].value"},
		{name: "422 invalid table value", items: one("owners", val(`[{"name":"A","stake":"1"}]`), nil), want: 422, key: "data[0].value"},
		{name: "table value accepted normalized", items: one("owners", val(`[{"share":12.50,"name":"Ann"}]`), nil), want: 200,
			check: accepted("owners", `[{"name":"Ann","share":"12.5"}]`)},
		{name: "422 built-in field of the request", items: one("company", val("X"), nil), want: 422, key: "data[0]"},
		{name: "422 external field not in the request", items: one("employees", val("3"), nil), want: 422, key: "data[0]"},
		{name: "422 manual field", items: one("note", val("hi"), nil), want: 422, key: "data[0]"},
		{name: "422 error without fetch_request_id", items: one("revenue", nil, val("x")), want: 422, key: "data[0].error",
			send: func(t *testing.T, s *scn, mode string, items []item) *apitest.Response {
				return s.put(t, s.f.TenantEnv, s.f.tok, mode, nil, items...)
			}},
		{name: "422 unknown fetch_request_id", items: one("revenue", val("1"), nil), want: 422, key: "fetch_request_id",
			send: func(t *testing.T, s *scn, mode string, items []item) *apitest.Response {
				fr := "018f0000-0000-7000-8000-000000000000"
				return s.put(t, s.f.TenantEnv, s.f.tok, mode, &fr, items...)
			}},
		{name: "422 another act's fetch_request_id", items: one("revenue", val("1"), nil), want: 422, key: "fetch_request_id",
			send: func(t *testing.T, s *scn, mode string, items []item) *apitest.Response {
				other := s.f.createAct(t, "other")
				fr := s.f.requestFetch(t, other, "revenue").Id.String()
				return s.put(t, s.f.TenantEnv, s.f.tok, mode, &fr, items...)
			}},
		{name: "422 malformed fetch_request_id", items: one("revenue", val("1"), nil), want: 422, key: "fetch_request_id",
			send: func(t *testing.T, s *scn, mode string, items []item) *apitest.Response {
				fr := "not-a-uuid"
				return s.put(t, s.f.TenantEnv, s.f.tok, mode, &fr, items...)
			}},
		{name: "single: data point not in the act: 404", modes: []string{"single"}, items: one("", val("1"), nil), want: 404},
		{name: "422 duplicate ids", modes: []string{"bulk"}, want: 422, key: "data[1]",
			items: func(*scn) []item {
				return []item{{field: "revenue", value: val("1")}, {field: "revenue", value: val("1")}}
			}},
		{name: "422 duplicate by id and key", modes: []string{"bulk"}, want: 422, key: "data[1]",
			items: func(*scn) []item {
				return []item{{field: "revenue", value: val("1")}, {field: "revenue", byKey: true, value: val("2")}}
			}},
		{name: "422 duplicate by template_field_id and key", modes: []string{"bulk"}, want: 422, key: "data[1]",
			items: func(*scn) []item {
				return []item{{field: "rating", byTF: true, err: val("x")}, {field: "rating", byKey: true, value: val("A")}}
			}},
		{name: "422 item naming no data point", modes: []string{"bulk"}, want: 422, key: "data[0]",
			items: func(*scn) []item { return []item{{noID: true, value: val("1")}} }},
		{name: "422 unknown key", modes: []string{"bulk"}, want: 422, key: "data[0].template_field_key",
			items: func(*scn) []item { return []item{{field: "nope", byKey: true, value: val("1")}} }},
		{name: "422 identifiers disagree", modes: []string{"bulk"}, want: 422, key: "data[0]",
			items: func(s *scn) []item {
				return []item{{field: "revenue", byKey: true, extraID: ptr64(s.a.Data[1].Id) /* rating */, value: val("1")}}
			}},
		{name: "422 reports every bad item", modes: []string{"bulk"}, want: 422, key: "data[2].value",
			items: func(*scn) []item {
				return []item{{field: "revenue", value: val("x")}, {field: "note", value: val("y")}, {field: "rating", value: val("Z")}}
			},
			check: func(t *testing.T, s *scn, mode string, r *apitest.Response, before state) {
				e := r.Err(t)
				if len(e.Errors["data[0].value"]) == 0 || len(e.Errors["data[1]"]) == 0 {
					t.Errorf("errors = %v, want data[0].value, data[1] and data[2].value", e.Errors)
				}
			}},
		{name: "bulk by key and template_field_id, values and errors together", modes: []string{"bulk"}, want: 200,
			items: func(*scn) []item {
				return []item{{field: "rating", byKey: true, value: val("C")}, {field: "revenue", byTF: true, err: val("no data")},
					{field: "owners", value: val("[]")}}
			},
			check: func(t *testing.T, s *scn, mode string, r *apitest.Response, before state) {
				var b models.BulkDataResult
				r.Decode(t, &b)
				if b.FetchRequestId == nil || *b.FetchRequestId != s.fr.Id || len(b.Data) != 3 ||
					b.Data[0].TemplateFieldKey != "rating" || strp(b.Data[0].Value) != "=C" || b.Data[1].Fetch.State != models.FetchStateFailed ||
					strp(b.Data[2].Value) != "=[]" {
					t.Errorf("bulk result = %+v", b)
				}
				st := s.state(t)
				if st.fr.Status != models.FetchRequestCompleted || st.history != before.history+3 {
					t.Errorf("request %s, history +%d; want completed, +3", st.fr.Status, st.history-before.history)
				}
			}},

		// Ordinary edits (no fetch_request_id).
		{name: "ordinary edit: value_edited by the user, fetch state untouched", items: one("revenue", val("99.9"), nil), want: 200,
			send: func(t *testing.T, s *scn, mode string, items []item) *apitest.Response {
				return s.put(t, s.f.TenantEnv, s.f.tok, mode, nil, items...)
			},
			check: func(t *testing.T, s *scn, mode string, r *apitest.Response, before state) {
				d := dataPoint(t, mode, r, s)
				if strp(d.Value) != "=99.90" || d.SourceValue != nil || d.Revision != 1 || d.Fetch == nil || d.Fetch.State != models.FetchStateAwaiting {
					t.Errorf("edited data point = %+v (fetch %+v)", d, d.Fetch)
				}
				h := s.lastHistory(t)
				if h.Kind != models.HistoryValueEdited || h.Actor.Type != models.ActorUser || h.FetchRequestId != nil || strp(h.NewValue) != "=99.90" {
					t.Errorf("history entry = %+v", h)
				}
				if mode == "bulk" {
					var b models.BulkDataResult
					r.Decode(t, &b)
					if b.FetchRequestId != nil {
						t.Errorf("ordinary bulk result fetch_request_id = %v, want null", b.FetchRequestId)
					}
				}
				// It cannot slip past the request: the pending result is now stale.
				s.correlated(t, mode, item{field: "revenue", value: val("1")}).Status(t, http.StatusConflict)
			}},
		{name: "ordinary edit of a manual field", items: one("note", val("checked"), nil), want: 200,
			send: func(t *testing.T, s *scn, mode string, items []item) *apitest.Response {
				return s.put(t, s.f.TenantEnv, s.f.tok, mode, nil, items...)
			}},
		{name: "ordinary edit with an invalid value: 422", items: one("note", val(strings.Repeat("x", 501)), nil), want: 422, key: "data[0].value",
			send: func(t *testing.T, s *scn, mode string, items []item) *apitest.Response {
				return s.put(t, s.f.TenantEnv, s.f.tok, mode, nil, items...)
			}},
		{name: "ordinary edit of a final act: 400", items: one("note", val("x"), nil), want: 400, key: "status",
			setup: func(t *testing.T, s *scn) {
				s.f.Do("POST", "/api/1.0/acts/"+s.a.Uuid.String()+"/finalize", s.f.tok, nil).Status(t, http.StatusOK)
			},
			send: func(t *testing.T, s *scn, mode string, items []item) *apitest.Response {
				return s.put(t, s.f.TenantEnv, s.f.tok, mode, nil, items...)
			}},
		{name: "ordinary edit by a viewer: 403", items: one("note", val("x"), nil), want: 403,
			send: func(t *testing.T, s *scn, mode string, items []item) *apitest.Response {
				return s.put(t, s.f.TenantEnv, s.f.Token(s.f.viewer, auth.AllScopes...), mode, nil, items...)
			}},
	}
}

func ptr64(i int64) *int64 { return &i }

func TestActDataPut(t *testing.T) {
	clk := newClock()
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		actstest.Webhook(t, env.DB, f.Ctx, f.member, outbox.ActFetchData, "https://integration.example.com/hook")
		for _, c := range putCases() {
			modes := c.modes
			if modes == nil {
				modes = []string{"single", "bulk"}
			}
			for _, mode := range modes {
				t.Run(c.name+"/"+mode, func(t *testing.T) {
					s := &scn{f: f, clk: clk, a: f.createAct(t, c.name)}
					if c.pre != nil {
						c.pre(t, s)
					}
					s.a = f.getAct(t, s.a)
					s.fr = f.requestFetch(t, s.a, "revenue", "rating", "owners", "company")
					if c.setup != nil {
						c.setup(t, s)
					}
					before := s.state(t)
					items := c.items(s)
					var barriers atomic.Int64
					env.DB.SetDurableFault(func(context.Context) error { barriers.Add(1); return nil })
					var r *apitest.Response
					if c.send != nil {
						r = c.send(t, s, mode, items)
					} else {
						r = s.correlated(t, mode, items...)
					}
					env.DB.SetDurableFault(nil)
					s.barriers = barriers.Load()
					r.Status(t, c.want)
					if c.want >= 400 {
						e := r.Err(t)
						if key := c.key; key != "" {
							if mode == "single" {
								key = singleKey(key)
							}
							if len(e.Errors[key]) == 0 {
								t.Errorf("errors = %v, want a message for %s", e.Errors, key)
							}
						}
						unchangedSince(t, s, before)
					}
					if c.check != nil {
						c.check(t, s, mode, r, before)
					}
				})
			}
		}
	}, withClock(clk), apitest.WithConfig(func(c *config.Config) { c.FetchWindow = testWindow }))
}
