package registry_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/authspec"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/keyring"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
)

// logFixture is a tenant with an admin and a member, and the store.
type logFixture struct {
	t             *testing.T
	d             *db.DB
	ctx           context.Context
	store         *registry.Store
	admin, member *auth.Principal
}

func newLogFixture(t *testing.T, d *db.DB, slug string) *logFixture {
	t.Helper()
	ctx, tn := testdb.NewTenant(t, d, slug)
	pol, err := authspec.Load()
	if err != nil {
		t.Fatal(err)
	}
	box, err := sealing.New(keyring.MustNew("registry-log-test-secret-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	f := &logFixture{t: t, d: d, ctx: ctx, store: registry.New(d, box, registry.Options{Policy: pol, AllowPrivate: true})}
	for _, p := range []**auth.Principal{&f.admin, &f.member} {
		role := auth.RoleAdmin
		if p == &f.member {
			role = auth.RoleMember
		}
		id, err := db.NextID(d.DB, tn.ID, "users")
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Table("users").Create(map[string]any{"tenant_id": tn.ID, "id": id, "email": role + "@" + slug, "name": role, "role": role, "password_hash": "!"}).Error; err != nil {
			t.Fatal(err)
		}
		*p = &auth.Principal{TenantID: tn.ID, UserID: id, Role: role}
	}
	return f
}

func (f *logFixture) webhook(p *auth.Principal) int64 {
	f.t.Helper()
	w, _, err := f.store.Create(f.ctx, p, outbox.ActCreated, "http://127.0.0.1:9/hook")
	if err != nil {
		f.t.Fatal(err)
	}
	return w.ID
}

// delivery writes an event of kind and its delivery to webhook, created
// at, with status (a final one in the history, as the outbox keeps it).
func (f *logFixture) delivery(webhook int64, kind string, status outbox.Status, at time.Time) string {
	f.t.Helper()
	tid := tenant.ID(f.ctx)
	ev, id := uuid.NewString(), uuid.NewString()
	if err := f.d.Table("events").Create(map[string]any{"tenant_id": tid, "id": ev, "kind": kind, "payload": "{}", "occurred_at": at}).Error; err != nil {
		f.t.Fatal(err)
	}
	table := "deliveries"
	if status.Final() {
		table = "delivery_history"
	}
	if err := f.d.Table(table).Create(map[string]any{"tenant_id": tid, "id": id, "webhook_id": webhook, "event_id": ev,
		"status": string(status), "attempts": 1, "created_at": at, "updated_at": at}).Error; err != nil {
		f.t.Fatal(err)
	}
	return id
}

func ids(ds []registry.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

// The filtered delivery log, on both dialects: cursor pages walk the whole
// log newest first and back again without a gap or a repeat (deliveries
// created at the same instant included), across the live queue and the
// history; each filter keeps exactly its deliveries; a bad filter is
// Invalid with a message per field; a member does not reach an admin's
// registration, nor anyone another tenant's.
func TestFindDeliveries(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newLogFixture(t, d, "acme")
		wh := f.webhook(f.admin)
		t0 := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
		statuses := []outbox.Status{outbox.Succeeded, outbox.Failed, outbox.Pending}
		type made struct {
			id     string
			kind   string
			status outbox.Status
			at     time.Time
		}
		var all []made
		for i := range 9 {
			at := t0.Add(time.Duration(i) * time.Hour)
			if i == 4 {
				at = all[3].at // two at the same instant: the id breaks the tie
			}
			kind := outbox.ActCreated
			if i%2 == 1 {
				kind = outbox.WebhookTest
			}
			st := statuses[i%3]
			all = append(all, made{f.delivery(wh, kind, st, at), kind, st, at})
		}
		// Newest first: by time, then by id (descending).
		want := slices.Clone(all)
		slices.SortFunc(want, func(a, b made) int {
			if c := b.at.Compare(a.at); c != 0 {
				return c
			}
			if a.id > b.id {
				return -1
			}
			return 1
		})
		wantIDs := make([]string, len(want))
		for i, m := range want {
			wantIDs[i] = m.id
		}

		// Forward, two a page.
		var got []string
		var pages [][]string
		var after *uuid.UUID
		for {
			ds, more, err := f.store.FindDeliveries(f.ctx, f.admin, wh, registry.DeliveryFilter{After: after, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ids(ds)...)
			pages = append(pages, ids(ds))
			if !more {
				break
			}
			last := uuid.MustParse(ds[len(ds)-1].ID)
			after = &last
			if len(pages) > 10 {
				t.Fatal("paging does not end")
			}
		}
		if !slices.Equal(got, wantIDs) || len(pages) != 5 {
			t.Fatalf("forward pages %v; want %v in 5 pages", pages, wantIDs)
		}
		// Back from the last page: the page before it, in the same order.
		first := uuid.MustParse(pages[4][0])
		ds, more, err := f.store.FindDeliveries(f.ctx, f.admin, wh, registry.DeliveryFilter{Before: &first, Limit: 2})
		if err != nil || !more || !slices.Equal(ids(ds), pages[3]) {
			t.Fatalf("before %s: %v (more %v, %v); want %v", first, ids(ds), more, err, pages[3])
		}
		top := uuid.MustParse(pages[0][1])
		if ds, more, err := f.store.FindDeliveries(f.ctx, f.admin, wh, registry.DeliveryFilter{Before: &top, Limit: 2}); err != nil || more || !slices.Equal(ids(ds), pages[0][:1]) {
			t.Fatalf("before the second: %v (more %v, %v)", ids(ds), more, err)
		}

		// Each filter keeps exactly its deliveries, in the same order.
		from, until := t0.Add(2*time.Hour), t0.Add(6*time.Hour)
		for name, c := range map[string]struct {
			f    registry.DeliveryFilter
			keep func(m made) bool
		}{
			"failed":  {registry.DeliveryFilter{Status: string(outbox.Failed)}, func(m made) bool { return m.status == outbox.Failed }},
			"pending": {registry.DeliveryFilter{Status: string(outbox.Pending)}, func(m made) bool { return m.status == outbox.Pending }},
			"test":    {registry.DeliveryFilter{Event: outbox.WebhookTest}, func(m made) bool { return m.kind == outbox.WebhookTest }},
			"range":   {registry.DeliveryFilter{From: &from, Until: &until}, func(m made) bool { return !m.at.Before(from) && m.at.Before(until) }},
			"all three": {registry.DeliveryFilter{Status: string(outbox.Succeeded), Event: outbox.ActCreated, From: &from},
				func(m made) bool {
					return m.status == outbox.Succeeded && m.kind == outbox.ActCreated && !m.at.Before(from)
				}},
		} {
			var exp []string
			for _, m := range want {
				if c.keep(m) {
					exp = append(exp, m.id)
				}
			}
			ds, more, err := f.store.FindDeliveries(f.ctx, f.admin, wh, c.f)
			if err != nil || more || !slices.Equal(ids(ds), exp) || len(exp) == 0 {
				t.Errorf("%s: %v (more %v, %v); want %v", name, ids(ds), more, err, exp)
			}
		}

		// Bad input: Invalid, one message per field.
		unknown := uuid.New()
		for field, bad := range map[string]registry.DeliveryFilter{
			"status": {Status: "lost"},
			"event":  {Event: "act.exploded"},
			"to":     {From: &until, Until: &from},
			"after":  {After: &unknown},
			"before": {Before: &unknown},
			"limit":  {Limit: 1000},
		} {
			_, _, err := f.store.FindDeliveries(f.ctx, f.admin, wh, bad)
			var ae *apperr.Error
			if !errors.As(err, &ae) || ae.Kind != apperr.Invalid || len(ae.Fields[field]) != 1 || len(ae.Fields) != 1 {
				t.Errorf("%s: %v; want Invalid on %s alone", field, err, field)
			}
		}

		// Visibility: the registry's rule.
		if _, _, err := f.store.FindDeliveries(f.ctx, f.member, wh, registry.DeliveryFilter{}); !apperr.Is(err, apperr.NotFound) {
			t.Fatalf("a member, an admin's registration: %v", err)
		}
		own := f.webhook(f.member)
		mine := f.delivery(own, outbox.ActCreated, outbox.Pending, t0)
		if ds, _, err := f.store.FindDeliveries(f.ctx, f.member, own, registry.DeliveryFilter{}); err != nil || !slices.Equal(ids(ds), []string{mine}) {
			t.Fatalf("a member, own registration: %v, %v", ids(ds), err)
		}
		// Another registration's delivery is no cursor here.
		c := uuid.MustParse(mine)
		if _, _, err := f.store.FindDeliveries(f.ctx, f.admin, wh, registry.DeliveryFilter{After: &c}); !apperr.Is(err, apperr.Invalid) {
			t.Fatalf("another registration's delivery as the cursor: %v", err)
		}
		g := newLogFixture(t, d, "globex")
		if _, _, err := g.store.FindDeliveries(g.ctx, g.admin, wh, registry.DeliveryFilter{}); !apperr.Is(err, apperr.NotFound) {
			t.Fatalf("another tenant: %v", err)
		}
	})
}
