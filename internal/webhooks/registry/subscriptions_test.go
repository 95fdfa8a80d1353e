package registry_test

import (
	"slices"
	"testing"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
)

// TestSubscriptions, on both dialects: a registration takes several event
// types or all of them; Emit queues each event once per registration that
// takes its kind (however many of its kinds an emit carries), none to one
// that does not; a change of subscription applies to the next emit; the
// refusals name their field and change nothing; a token subscribes only to
// kinds whose read scope it holds, all events needing every one.
func TestSubscriptions(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newLogFixture(t, d, "acme")
		reg := func(sub registry.Subscription) *registry.Webhook {
			t.Helper()
			w, _, err := f.store.Register(f.ctx, f.admin, registry.Registration{Target: "http://127.0.0.1:9/hook", Subscription: sub})
			if err != nil {
				t.Fatal(err)
			}
			return w
		}
		// Out of order and repeated: stored in the spec's order, once.
		two := reg(registry.Subscription{EventTypes: []string{outbox.ActUpdated, outbox.ActCreated, outbox.ActUpdated}})
		all := reg(registry.Subscription{AllEvents: true})
		one := reg(registry.Subscription{EventTypes: []string{outbox.ClientCreated}})
		if !slices.Equal(two.EventTypes, []string{outbox.ActCreated, outbox.ActUpdated}) || two.Event != outbox.ActCreated || two.AllEvents {
			t.Fatalf("created: %+v", two)
		}
		got, err := f.store.Get(f.ctx, f.admin, two.ID)
		if err != nil || !slices.Equal(got.Subscription().Kinds(), []string{outbox.ActCreated, outbox.ActUpdated}) {
			t.Fatalf("read back: %+v %v", got, err)
		}
		if got, _ := f.store.Get(f.ctx, f.admin, all.ID); !got.AllEvents || !slices.Equal(got.Subscription().Kinds(), outbox.Kinds) || got.Event != outbox.Kinds[0] {
			t.Fatalf("all events read back: %+v", got)
		}
		if ws, _, err := f.store.List(f.ctx, f.admin, mustPage(t)); err != nil || len(ws) != 3 || !slices.Equal(ws[2].EventTypes, []string{outbox.ClientCreated}) {
			t.Fatalf("list: %+v %v", ws, err)
		}

		box := &outbox.Outbox{Policy: outbox.Policy{AllowHTTP: true}}
		emit := func(kinds ...string) map[int64][]string {
			t.Helper()
			var evs []outbox.Event
			for _, k := range kinds {
				evs = append(evs, outbox.Event{Kind: k, Data: map[string]any{}})
			}
			if err := d.Tx(f.ctx, func(tx *gorm.DB) error {
				_, err := box.EmitAll(f.ctx, tx, evs...)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return deliveredKinds(t, d)
		}
		// One event of a kind two registrations take: one delivery each.
		if got := emit(outbox.ActUpdated); !slices.Equal(got[two.ID], []string{outbox.ActUpdated}) ||
			!slices.Equal(got[all.ID], []string{outbox.ActUpdated}) || len(got[one.ID]) != 0 {
			t.Fatalf("act.updated went to %v", got)
		}
		// One change reported by three events of three kinds: each event
		// once to each registration taking its kind.
		got2 := emit(outbox.ActCreated, outbox.ActDeleted, outbox.ClientCreated)
		if !slices.Equal(got2[two.ID], []string{outbox.ActCreated, outbox.ActUpdated}) ||
			!slices.Equal(got2[all.ID], []string{outbox.ActCreated, outbox.ActDeleted, outbox.ActUpdated, outbox.ClientCreated}) ||
			!slices.Equal(got2[one.ID], []string{outbox.ClientCreated}) {
			t.Fatalf("after three kinds: %v", got2)
		}
		if n, err := box.EligibleCount(f.ctx, d.DB, outbox.ActDeleted); err != nil || n != 1 {
			t.Errorf("eligible for act.deleted: %d %v, want 1 (all events)", n, err)
		}

		// A change: two now takes act.deleted alone, all a list, one all.
		if _, err := f.store.Update(f.ctx, f.admin, two.ID, registry.Patch{Subscription: &registry.Subscription{EventTypes: []string{outbox.ActDeleted}}}); err != nil {
			t.Fatal(err)
		}
		if w, err := f.store.Update(f.ctx, f.admin, all.ID, registry.Patch{Subscription: &registry.Subscription{EventTypes: []string{outbox.ClientUpdated}}}); err != nil || w.AllEvents || w.Event != outbox.ClientUpdated {
			t.Fatalf("all → one: %+v %v", w, err)
		}
		if w, err := f.store.Update(f.ctx, f.admin, one.ID, registry.Patch{Subscription: &registry.Subscription{AllEvents: true}}); err != nil || !w.AllEvents || len(w.EventTypes) != 0 {
			t.Fatalf("one → all: %+v %v", w, err)
		}
		before := deliveredKinds(t, d)
		after := emit(outbox.ActDeleted)
		if len(after[two.ID]) != len(before[two.ID])+1 || len(after[all.ID]) != len(before[all.ID]) || len(after[one.ID]) != len(before[one.ID])+1 {
			t.Fatalf("after the changes act.deleted went: before %v, after %v", before, after)
		}

		// Refusals: the field named, nothing changed.
		for _, tc := range []struct {
			name  string
			sub   registry.Subscription
			field string
		}{
			{"nothing", registry.Subscription{}, "event_types"},
			{"unknown", registry.Subscription{EventTypes: []string{outbox.ActCreated, "act.exploded"}}, "event_types"},
			{"test events", registry.Subscription{EventTypes: []string{outbox.WebhookTest}}, "event_types"},
			{"both", registry.Subscription{EventTypes: []string{outbox.ActCreated}, AllEvents: true}, "event_types"},
		} {
			_, _, err := f.store.Register(f.ctx, f.admin, registry.Registration{Target: "http://127.0.0.1:9/x", Subscription: tc.sub})
			if !apperr.Is(err, apperr.Invalid) || len(fieldErrors(err)[tc.field]) == 0 {
				t.Errorf("register %s: %v, want Invalid naming %s", tc.name, err, tc.field)
			}
			_, err = f.store.Update(f.ctx, f.admin, two.ID, registry.Patch{Subscription: &tc.sub})
			if !apperr.Is(err, apperr.Invalid) || len(fieldErrors(err)[tc.field]) == 0 {
				t.Errorf("update %s: %v, want Invalid naming %s", tc.name, err, tc.field)
			}
		}
		if got, _ := f.store.Get(f.ctx, f.admin, two.ID); !slices.Equal(got.EventTypes, []string{outbox.ActDeleted}) {
			t.Errorf("a refused change was applied: %+v", got)
		}

		// The read-scope rule per kind: a token with acts:read alone may
		// take act kinds, not a client kind beside them, nor all events.
		app := *f.admin
		app.ClientID, app.Scopes = "app_1", []string{auth.ScopeWebhooksWrite, auth.ScopeActsRead}
		if _, _, err := f.store.Register(f.ctx, &app, registry.Registration{Target: "http://127.0.0.1:9/a", Subscription: registry.Subscription{EventTypes: []string{outbox.ActCreated, outbox.ActDeleted}}}); err != nil {
			t.Errorf("acts:read on act kinds: %v", err)
		}
		for _, sub := range []registry.Subscription{{EventTypes: []string{outbox.ActCreated, outbox.ClientCreated}}, {AllEvents: true}} {
			if _, _, err := f.store.Register(f.ctx, &app, registry.Registration{Target: "http://127.0.0.1:9/a", Subscription: sub}); !apperr.Is(err, apperr.Forbidden) {
				t.Errorf("acts:read on %+v: %v, want Forbidden", sub, err)
			}
			if _, err := f.store.Update(f.ctx, &app, two.ID, registry.Patch{Subscription: &sub}); !apperr.Is(err, apperr.Forbidden) {
				t.Errorf("acts:read changing to %+v: %v, want Forbidden", sub, err)
			}
		}
		app.Scopes = append(app.Scopes, auth.ScopeClientsRead)
		if _, _, err := f.store.Register(f.ctx, &app, registry.Registration{Target: "http://127.0.0.1:9/a", Subscription: registry.Subscription{AllEvents: true}}); err != nil {
			t.Errorf("every read scope, all events: %v", err)
		}

		// Deleting a registration takes its event types with it.
		if err := f.store.Delete(f.ctx, f.admin, two.ID); err != nil {
			t.Fatal(err)
		}
		var n int64
		d.Table("webhook_event_types").Where("webhook_id = ?", two.ID).Count(&n)
		if n != 0 {
			t.Errorf("%d event types left after the deletion", n)
		}
	})
}

// deliveredKinds is, per registration, the kinds of the deliveries queued
// to it, sorted.
func deliveredKinds(t *testing.T, d *db.DB) map[int64][]string {
	t.Helper()
	var rows []struct {
		WebhookID int64
		Kind      string
	}
	if err := d.Raw("SELECT deliveries.webhook_id, events.kind FROM deliveries JOIN events ON events.tenant_id = deliveries.tenant_id AND events.id = deliveries.event_id ORDER BY deliveries.webhook_id, events.kind").Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	out := map[int64][]string{}
	for _, r := range rows {
		out[r.WebhookID] = append(out[r.WebhookID], r.Kind)
	}
	return out
}

func mustPage(t *testing.T) page.Request {
	t.Helper()
	pg, err := page.New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pg
}
