package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/acts/actstest"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/fieldtype"
	"github.com/finsvc/finsvc/internal/templates"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

func ip(i int) *int { return &i }

// actFields is a template with every kind of source: external fields
// (scalar and table), built-ins and a manual one.
var actFields = []actstest.F{
	{Key: "revenue", Type: "currency", Source: templates.SourceExternalData, Options: &fieldtype.Options{Currency: sp("SEK")}},
	{Key: "rating", Type: "select", Source: templates.SourceExternalData, Options: &fieldtype.Options{Choices: []string{"A", "B", "C"}}},
	{Key: "employees", Type: "integer", Source: templates.SourceExternalData},
	{Key: "owners", Type: "table", Source: templates.SourceExternalData, Options: &fieldtype.Options{Columns: []fieldtype.Column{
		{Key: "name", Name: "Name", Type: "text"}, {Key: "share", Name: "Share", Type: "percentage"}}}},
	{Key: "company", Type: "text", Source: templates.SourceClientCompanyName},
	{Key: "limit", Type: "currency", Source: templates.SourceClientCreditLimit, Options: &fieldtype.Options{Currency: sp("SEK")}},
	{Key: "opened", Type: "date", Source: templates.SourceActCreatedAt},
	{Key: "note", Type: "text", Source: templates.SourceManual, Options: &fieldtype.Options{MaxLength: ip(500)}},
}

func sp(s string) *string { return &s }

// strp renders an optional string for comparisons ("<nil>" for none).
func strp(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return "=" + *s
}

type actFixture struct {
	*apitest.TenantEnv
	admin, member, viewer int64
	tok                   string // member, acts:read+write
	client                clients.Client
	tpl                   templates.Template
}

func newActFixture(t *testing.T, env *apitest.Env, slug string) *actFixture {
	t.Helper()
	te := env.Tenant(slug)
	f := &actFixture{TenantEnv: te}
	f.admin = te.User(auth.RoleAdmin)
	f.member = te.User(auth.RoleMember)
	f.viewer = te.User(auth.RoleViewer)
	f.tok = te.Token(f.member, auth.ScopeActsRead, auth.ScopeActsWrite)
	f.client = actstest.Client(t, env.DB, te.Ctx, "Acme AB")
	f.tpl = actstest.Template(t, env.DB, te.Ctx, "Credit review", actFields...)
	return f
}

func (f *actFixture) createAct(t *testing.T, title string) models.Act {
	t.Helper()
	var a models.Act
	f.Do("POST", "/api/1.0/acts", f.tok, map[string]any{"client_id": f.client.ID, "template_id": f.tpl.ID, "title": title}).
		Status(t, http.StatusCreated).Decode(t, &a)
	return a
}

type eventRow struct {
	ID      string
	Kind    string
	Payload string
}

func events(t *testing.T, env *apitest.Env, tenantID int64) []eventRow {
	t.Helper()
	var rows []eventRow
	if err := env.DB.Table("events").Where("tenant_id = ?", tenantID).Order("occurred_at, id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	return rows
}

func countRows(t *testing.T, env *apitest.Env, table string, where string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := env.DB.Table(table).Where(where, args...).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func dpByKey(t *testing.T, a models.Act, key string) models.DataPoint {
	t.Helper()
	for _, d := range a.Data {
		if d.TemplateFieldKey == key {
			return d
		}
	}
	t.Fatalf("act has no data point %q", key)
	return models.DataPoint{}
}

func TestActLifecycle(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		hook := actstest.Webhook(t, env.DB, f.Ctx, f.member, outbox.ActCreated, "https://hooks.example.com/a")
		actstest.Webhook(t, env.DB, f.Ctx, f.member, outbox.ActDuplicated, "https://hooks.example.com/d")

		a := f.createAct(t, "Annual review")
		if a.Status != models.ActStatusDraft || a.Title != "Annual review" || a.ClientId != f.client.ID || a.TemplateId != f.tpl.ID {
			t.Fatalf("created act = %+v", a)
		}
		if len(a.Data) != len(actFields) {
			t.Fatalf("act has %d data points, want %d", len(a.Data), len(actFields))
		}
		for i, d := range a.Data {
			want := actFields[i]
			if d.TemplateFieldKey != want.Key || templates.Source(d.Source) != want.Source || d.TemplateFieldId != f.tpl.Fields[i].ID ||
				d.ExternalDataField != (want.Source == templates.SourceExternalData) || d.Fetch != nil || d.Revision != 0 {
				t.Errorf("data point %d = %+v, want key %s source %s", i, d, want.Key, want.Source)
			}
		}
		// Built-ins are filled at creation; external and manual fields are empty.
		if d := dpByKey(t, a, "company"); d.Value == nil || *d.Value != "Acme AB" || d.SourceValue == nil || *d.SourceValue != "Acme AB" {
			t.Errorf("company = %+v", d)
		}
		if d := dpByKey(t, a, "limit"); d.Value == nil || *d.Value != "125000.50" {
			t.Errorf("limit = %v", d.Value)
		}
		if d := dpByKey(t, a, "opened"); d.Value == nil || *d.Value != a.CreatedAt.UTC().Format("2006-01-02") {
			t.Errorf("opened = %v", d.Value)
		}
		if d := dpByKey(t, a, "owners"); d.Value != nil || d.Options == nil || d.Options.Columns == nil || len(*d.Options.Columns) != 2 {
			t.Errorf("owners = %+v", d)
		}

		// act.created is in the outbox, with one delivery for the registration.
		evs := events(t, env, f.Tenant.ID)
		if len(evs) != 1 || evs[0].Kind != outbox.ActCreated {
			t.Fatalf("events = %+v, want one act.created", evs)
		}
		var created models.ActCreatedPayload
		if err := json.Unmarshal([]byte(evs[0].Payload), &created); err != nil {
			t.Fatal(err)
		}
		if created.Act.Uuid != a.Uuid || len(created.Act.Data) != len(actFields) {
			t.Errorf("act.created payload = %+v", created)
		}
		if n := countRows(t, env, "delivery_log", "tenant_id = ? AND event_id = ? AND webhook_id = ?", f.Tenant.ID, evs[0].ID, hook); n != 1 {
			t.Errorf("%d deliveries for act.created, want 1", n)
		}

		var got models.Act
		f.Do("GET", "/api/1.0/acts/"+a.Uuid.String(), f.tok, nil).Status(t, http.StatusOK).Decode(t, &got)
		if got.Uuid != a.Uuid || len(got.Data) != len(a.Data) || got.Data[4].Value == nil {
			t.Errorf("GET act = %+v", got)
		}

		var upd models.Act
		f.Do("PATCH", "/api/1.0/acts/"+a.Uuid.String(), f.tok, map[string]any{"title": "Renamed"}).Status(t, http.StatusOK).Decode(t, &upd)
		if upd.Title != "Renamed" || len(upd.Data) != len(actFields) {
			t.Errorf("PATCH = %+v", upd)
		}

		var fin models.Act
		f.Do("POST", "/api/1.0/acts/"+a.Uuid.String()+"/finalize", f.tok, nil).Status(t, http.StatusOK).Decode(t, &fin)
		if fin.Status != models.ActStatusFinal {
			t.Errorf("finalized status = %s", fin.Status)
		}
		// A final act no longer changes: 400 with errors.status.
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"POST", "/finalize", nil},
			{"PATCH", "", map[string]any{"title": "Again"}},
			{"DELETE", "", nil},
		} {
			e := f.Do(c.method, "/api/1.0/acts/"+a.Uuid.String()+c.path, f.tok, c.body).Status(t, http.StatusBadRequest).Err(t)
			if len(e.Errors["status"]) == 0 {
				t.Errorf("%s %s on a final act: errors = %v, want errors.status", c.method, c.path, e.Errors)
			}
		}

		// Duplicate: a new draft with the values, one act.duplicated, no act.created.
		var dup models.Act
		f.Do("POST", "/api/1.0/acts/"+a.Uuid.String()+"/duplicate", f.tok, nil).Status(t, http.StatusCreated).Decode(t, &dup)
		if dup.Uuid == a.Uuid || dup.Status != models.ActStatusDraft || dup.Title != "Renamed" || len(dup.Data) != len(a.Data) {
			t.Fatalf("duplicate = %+v", dup)
		}
		for i := range dup.Data {
			if dup.Data[i].Id == a.Data[i].Id || strp(dup.Data[i].Value) != strp(a.Data[i].Value) ||
				strp(dup.Data[i].SourceValue) != strp(a.Data[i].SourceValue) || dup.Data[i].TemplateFieldKey != a.Data[i].TemplateFieldKey {
				t.Errorf("duplicated data point %d = %+v, source %+v", i, dup.Data[i], a.Data[i])
			}
		}
		evs = events(t, env, f.Tenant.ID)
		var kinds []string
		for _, e := range evs {
			kinds = append(kinds, e.Kind)
		}
		// The lifecycle's own events and one act.duplicated: no second
		// act.created.
		var dupEvent *eventRow
		for i := range evs {
			if evs[i].Kind == outbox.ActDuplicated {
				dupEvent = &evs[i]
			}
		}
		slices.Sort(kinds)
		if fmt.Sprint(kinds) != "[act.created act.duplicated act.finalized act.updated]" || dupEvent == nil {
			t.Fatalf("events after duplicate = %v, want [act.created act.duplicated act.finalized act.updated]", kinds)
		}
		var dupPayload models.ActDuplicatedPayload
		if err := json.Unmarshal([]byte(dupEvent.Payload), &dupPayload); err != nil {
			t.Fatal(err)
		}
		if dupPayload.Act.Uuid != dup.Uuid || dupPayload.SourceActUuid != a.Uuid {
			t.Errorf("act.duplicated payload = %+v", dupPayload)
		}

		// History, oldest first.
		var h models.HistoryList
		f.Do("GET", "/api/1.0/acts/"+a.Uuid.String()+"/history", f.tok, nil).Status(t, http.StatusOK).Decode(t, &h)
		var hk []models.HistoryKind
		for _, e := range h.Data {
			hk = append(hk, e.Kind)
			if e.Actor.Type != models.ActorUser || e.Actor.Id != fmt.Sprint(f.member) {
				t.Errorf("history actor = %+v", e.Actor)
			}
		}
		if fmt.Sprint(hk) != "[act_created act_updated act_finalized]" || h.Meta.Total != 3 {
			t.Errorf("history = %v (total %d)", hk, h.Meta.Total)
		}
		if u := h.Data[1]; u.OldValue == nil || *u.OldValue != "Annual review" || u.NewValue == nil || *u.NewValue != "Renamed" {
			t.Errorf("act_updated entry = %+v", u)
		}

		// The draft duplicate can be deleted; then it is gone.
		f.Do("DELETE", "/api/1.0/acts/"+dup.Uuid.String(), f.tok, nil).Status(t, http.StatusNoContent)
		f.Do("GET", "/api/1.0/acts/"+dup.Uuid.String(), f.tok, nil).Status(t, http.StatusNotFound)
		f.Do("GET", "/api/1.0/acts/"+dup.Uuid.String()+"/history", f.tok, nil).Status(t, http.StatusNotFound)
		if n := countRows(t, env, "data_points", "tenant_id = ? AND act_uuid = ?", f.Tenant.ID, dup.Uuid.String()); n != 0 {
			t.Errorf("%d data points left after delete", n)
		}
	})
}

func TestActCreateValidation(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		e := f.Do("POST", "/api/1.0/acts", f.tok, map[string]any{"client_id": 999, "template_id": 998, "title": "x"}).
			Status(t, http.StatusBadRequest).Err(t)
		if len(e.Errors["client_id"]) == 0 || len(e.Errors["template_id"]) == 0 {
			t.Errorf("errors = %v, want client_id and template_id", e.Errors)
		}
		e = f.Do("POST", "/api/1.0/acts", f.tok, map[string]any{"client_id": f.client.ID, "template_id": 998, "title": "x"}).
			Status(t, http.StatusBadRequest).Err(t)
		if len(e.Errors["template_id"]) == 0 || len(e.Errors["client_id"]) != 0 {
			t.Errorf("errors = %v, want template_id only", e.Errors)
		}
		for _, body := range []any{
			map[string]any{"client_id": f.client.ID, "template_id": f.tpl.ID, "title": ""},
			map[string]any{"client_id": f.client.ID, "template_id": f.tpl.ID},
			map[string]any{"client_id": "1", "template_id": f.tpl.ID, "title": "x"},
			map[string]any{"client_id": f.client.ID, "template_id": f.tpl.ID, "title": "x", "status": "final"},
			"{not json",
			map[string]any{"client_id": f.client.ID, "template_id": f.tpl.ID, "title": "Q1\x00"},
			fmt.Sprintf("{\"client_id\":%d,\"template_id\":%d,\"title\":\"Q1\xff\"}", f.client.ID, f.tpl.ID),
		} {
			f.Do("POST", "/api/1.0/acts", f.tok, body).Status(t, http.StatusBadRequest)
		}
		if n := countRows(t, env, "acts", "tenant_id = ?", f.Tenant.ID); n != 0 {
			t.Errorf("%d acts created by invalid requests", n)
		}
		if n := countRows(t, env, "events", "tenant_id = ?", f.Tenant.ID); n != 0 {
			t.Errorf("%d events written by invalid requests", n)
		}
	})
}

func TestActTenantIsolation(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		a := newActFixture(t, env, "acme")
		b := newActFixture(t, env, "beta") // same client, template and user ids
		if a.client.ID != b.client.ID || a.tpl.ID != b.tpl.ID {
			t.Fatalf("fixture ids differ: %d/%d, %d/%d", a.client.ID, b.client.ID, a.tpl.ID, b.tpl.ID)
		}
		actA := a.createAct(t, "A's act")
		p := "/api/1.0/acts/" + actA.Uuid.String()
		b.Do("GET", p, b.tok, nil).Status(t, http.StatusNotFound)
		b.Do("PATCH", p, b.tok, map[string]any{"title": "stolen"}).Status(t, http.StatusNotFound)
		b.Do("DELETE", p, b.tok, nil).Status(t, http.StatusNotFound)
		b.Do("POST", p+"/finalize", b.tok, nil).Status(t, http.StatusNotFound)
		b.Do("POST", p+"/duplicate", b.tok, nil).Status(t, http.StatusNotFound)
		b.Do("GET", p+"/history", b.tok, nil).Status(t, http.StatusNotFound)
		var list models.ActList
		b.Do("GET", "/api/1.0/acts", b.tok, nil).Status(t, http.StatusOK).Decode(t, &list)
		if list.Meta.Total != 0 || len(list.Data) != 0 {
			t.Errorf("beta lists %d acts", list.Meta.Total)
		}
		// beta's client with the same id has no acts; a client beta lacks is 404 too.
		b.Do("GET", fmt.Sprintf("/api/1.0/clients/%d/acts/latest", b.client.ID), b.tok, nil).Status(t, http.StatusNotFound)
		a.Do("GET", fmt.Sprintf("/api/1.0/clients/%d/acts/latest", a.client.ID), a.tok, nil).Status(t, http.StatusOK)
		// A's act is untouched.
		var got models.Act
		a.Do("GET", p, a.tok, nil).Status(t, http.StatusOK).Decode(t, &got)
		if got.Title != "A's act" || got.Status != models.ActStatusDraft {
			t.Errorf("act after cross-tenant attempts = %+v", got)
		}
		// Malformed uuid: 400 from validation, never 500.
		a.Do("GET", "/api/1.0/acts/not-a-uuid", a.tok, nil).Status(t, http.StatusBadRequest)
	})
}

func TestActPermissions(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		a := f.createAct(t, "x")
		p := "/api/1.0/acts/" + a.Uuid.String()
		viewerRW := f.Token(f.viewer, auth.ScopeActsRead, auth.ScopeActsWrite)
		memberRO := f.Token(f.member, auth.ScopeActsRead)
		noScope := f.Token(f.admin, auth.ScopeClientsRead)
		create := map[string]any{"client_id": f.client.ID, "template_id": f.tpl.ID, "title": "x"}
		for _, tok := range []string{viewerRW, memberRO, noScope} {
			f.Do("POST", "/api/1.0/acts", tok, create).Status(t, http.StatusForbidden)
			f.Do("PATCH", p, tok, map[string]any{"title": "y"}).Status(t, http.StatusForbidden)
			f.Do("POST", p+"/finalize", tok, nil).Status(t, http.StatusForbidden)
			f.Do("POST", p+"/duplicate", tok, nil).Status(t, http.StatusForbidden)
			f.Do("DELETE", p, tok, nil).Status(t, http.StatusForbidden)
		}
		// Reads: any role with acts:read; without it 403.
		f.Do("GET", p, viewerRW, nil).Status(t, http.StatusOK)
		f.Do("GET", "/api/1.0/acts", memberRO, nil).Status(t, http.StatusOK)
		f.Do("GET", p+"/history", viewerRW, nil).Status(t, http.StatusOK)
		f.Do("GET", p, noScope, nil).Status(t, http.StatusForbidden)
		f.Do("GET", "/api/1.0/acts", noScope, nil).Status(t, http.StatusForbidden)
		f.Do("GET", p+"/history", noScope, nil).Status(t, http.StatusForbidden)
		f.Do("GET", fmt.Sprintf("/api/1.0/clients/%d/acts/latest", f.client.ID), noScope, nil).Status(t, http.StatusForbidden)
		f.Do("GET", p, "", nil).Status(t, http.StatusUnauthorized)
		// Admins write.
		f.Do("PATCH", p, f.Token(f.admin, auth.ScopeActsWrite), map[string]any{"title": "admin"}).Status(t, http.StatusOK)
		if n := countRows(t, env, "acts", "tenant_id = ?", f.Tenant.ID); n != 1 {
			t.Errorf("%d acts after refused writes, want 1", n)
		}
	})
}

func TestActListAndPagination(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		other := actstest.Client(t, env.DB, f.Ctx, "Other AB")
		var uuids []string
		for i := range 12 {
			a := f.createAct(t, fmt.Sprintf("act %02d", i))
			uuids = append(uuids, a.Uuid.String())
		}
		f.Do("POST", "/api/1.0/acts/"+uuids[0]+"/finalize", f.tok, nil).Status(t, http.StatusOK)
		f.Do("POST", "/api/1.0/acts", f.tok, map[string]any{"client_id": other.ID, "template_id": f.tpl.ID, "title": "other"}).Status(t, http.StatusCreated)

		var l models.ActList
		f.Do("GET", "/api/1.0/acts?limit=5&page=2&client_id="+fmt.Sprint(f.client.ID), f.tok, nil).Status(t, http.StatusOK).Decode(t, &l)
		if l.Meta.Total != 12 || l.Meta.CurrentPage != 2 || l.Meta.PerPage != 5 || len(l.Data) != 5 {
			t.Fatalf("page 2 = %d items, meta %+v", len(l.Data), l.Meta)
		}
		// Newest first: page 2 of 12 holds acts 06..02.
		if l.Data[0].Title != "act 06" || l.Data[4].Title != "act 02" {
			t.Errorf("page 2 titles: %s … %s", l.Data[0].Title, l.Data[4].Title)
		}
		f.Do("GET", "/api/1.0/acts?page=3&limit=5&client_id="+fmt.Sprint(f.client.ID), f.tok, nil).Status(t, http.StatusOK).Decode(t, &l)
		if len(l.Data) != 2 {
			t.Errorf("last page has %d items, want 2", len(l.Data))
		}
		f.Do("GET", "/api/1.0/acts?page=40", f.tok, nil).Status(t, http.StatusOK).Decode(t, &l)
		if len(l.Data) != 0 || l.Meta.Total != 13 || l.Meta.CurrentPage != 40 || l.Meta.PerPage != 25 {
			t.Errorf("page past the end = %d items, meta %+v", len(l.Data), l.Meta)
		}
		f.Do("GET", "/api/1.0/acts?status=final", f.tok, nil).Status(t, http.StatusOK).Decode(t, &l)
		if l.Meta.Total != 1 || l.Data[0].Uuid.String() != uuids[0] {
			t.Errorf("status=final = %+v", l)
		}
		f.Do("GET", "/api/1.0/acts?status=draft&client_id="+fmt.Sprint(other.ID), f.tok, nil).Status(t, http.StatusOK).Decode(t, &l)
		if l.Meta.Total != 1 || l.Data[0].Title != "other" {
			t.Errorf("other client's drafts = %+v", l)
		}
		for _, q := range []string{"limit=101", "limit=0", "page=0", "page=abc", "limit=x", "status=open", "client_id=abc"} {
			f.Do("GET", "/api/1.0/acts?"+q, f.tok, nil).Status(t, http.StatusBadRequest)
		}

		var h models.HistoryList
		f.Do("GET", "/api/1.0/acts/"+uuids[0]+"/history?limit=1&page=2", f.tok, nil).Status(t, http.StatusOK).Decode(t, &h)
		if h.Meta.Total != 2 || len(h.Data) != 1 || h.Data[0].Kind != models.HistoryActFinalized {
			t.Errorf("history page 2 = %+v", h)
		}
		f.Do("GET", "/api/1.0/acts/"+uuids[0]+"/history?page=9", f.tok, nil).Status(t, http.StatusOK).Decode(t, &h)
		if len(h.Data) != 0 || h.Meta.Total != 2 {
			t.Errorf("history past the end = %+v", h)
		}
		f.Do("GET", "/api/1.0/acts/"+uuids[0]+"/history?limit=101", f.tok, nil).Status(t, http.StatusBadRequest)
	})
}

func TestLatestClientAct(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		latest := fmt.Sprintf("/api/1.0/clients/%d/acts/latest", f.client.ID)
		e := f.Do("GET", latest, f.tok, nil).Status(t, http.StatusNotFound).Err(t)
		if e.Message == "" {
			t.Error("no message")
		}
		f.Do("GET", "/api/1.0/clients/9999/acts/latest", f.tok, nil).Status(t, http.StatusNotFound)
		f.createAct(t, "first")
		second := f.createAct(t, "second")
		var got models.Act
		f.Do("GET", latest, f.tok, nil).Status(t, http.StatusOK).Decode(t, &got)
		if got.Uuid != second.Uuid || len(got.Data) != len(actFields) {
			t.Errorf("latest = %s (%s), want %s", got.Uuid, got.Title, second.Uuid)
		}
	})
}
