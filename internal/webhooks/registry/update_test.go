package registry_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
)

// TestUpdateEvent: a change of event is checked as at creation (only a
// subscribable kind; a refused one, alone or beside a refused target,
// changes nothing and names its field), follows the ownership rule (a
// member changes only its own registrations) and is recorded as the
// other changes are; a pending delivery of the previous kind stays queued.
func TestUpdateEvent(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newLogFixture(t, d, "acme")
		mine := f.webhook(f.member) // act.created
		admins := f.webhook(f.admin)
		queued := f.delivery(mine, outbox.ActCreated, outbox.Pending, time.Now().UTC())

		ev := outbox.ClientUpdated
		w, err := f.store.Update(f.ctx, f.member, mine, registry.Patch{Event: &ev})
		if err != nil {
			t.Fatal(err)
		}
		if w.Event != outbox.ClientUpdated || w.Target != "http://127.0.0.1:9/hook" || !w.Active {
			t.Fatalf("after the change: %+v", w)
		}
		if got, _ := f.store.Get(f.ctx, f.admin, mine); got.Event != outbox.ClientUpdated {
			t.Fatalf("stored event %q", got.Event)
		}
		var status string
		d.Table("deliveries").Where("id = ?", queued).Pluck("status", &status)
		if status != string(outbox.Pending) {
			t.Errorf("the delivery queued for the previous event is %q, want it left pending", status)
		}

		target := "ftp://nowhere"
		for _, tc := range []struct {
			name   string
			ch     registry.Patch
			fields []string
		}{
			{"unknown", registry.Patch{Event: ptr("act.exploded")}, []string{"event"}},
			{"test events are not subscribed to", registry.Patch{Event: ptr(outbox.WebhookTest)}, []string{"event"}},
			{"empty", registry.Patch{Event: ptr("")}, []string{"event"}},
			{"with a bad target", registry.Patch{Event: ptr("act.exploded"), Target: &target}, []string{"event", "target"}},
			{"with a good target", registry.Patch{Event: ptr("act.exploded"), Target: ptr("http://127.0.0.1:9/moved")}, []string{"event"}},
		} {
			_, err := f.store.Update(f.ctx, f.member, mine, tc.ch)
			fields := fieldErrors(err)
			if !apperr.Is(err, apperr.Invalid) || len(fields) != len(tc.fields) {
				t.Errorf("%s: %v (fields %v), want Invalid naming %v", tc.name, err, fields, tc.fields)
			}
			for _, f := range tc.fields {
				if len(fields[f]) == 0 {
					t.Errorf("%s: no message for %s: %v", tc.name, f, fields)
				}
			}
			if got, _ := f.store.Get(f.ctx, f.admin, mine); got.Event != outbox.ClientUpdated || got.Target != "http://127.0.0.1:9/hook" {
				t.Errorf("%s: the refused change was applied: %+v", tc.name, got)
			}
		}
		if msg := fieldErrors(mustErr(f.store.Update(f.ctx, f.member, mine, registry.Patch{Event: ptr("act.exploded")})))["event"]; len(msg) == 0 ||
			!strings.Contains(msg[0], outbox.ActCreated) {
			t.Errorf("the message does not list the kinds: %v", msg)
		}

		// A member may not change the admin's registration (NotFound, as it
		// cannot see it); a viewer may change none.
		if _, err := f.store.Update(f.ctx, f.member, admins, registry.Patch{Event: &ev}); !apperr.Is(err, apperr.NotFound) {
			t.Errorf("member on the admin's registration: %v", err)
		}
		viewer := *f.admin
		viewer.Role = "viewer"
		if _, err := f.store.Update(f.ctx, &viewer, admins, registry.Patch{Event: &ev}); !apperr.Is(err, apperr.Forbidden) {
			t.Errorf("viewer: %v", err)
		}
		if got, _ := f.store.Get(f.ctx, f.admin, admins); got.Event != outbox.ActCreated {
			t.Errorf("a refused caller changed the event to %q", got.Event)
		}
		// The admin may change the member's.
		if w, err := f.store.Update(f.ctx, f.admin, mine, registry.Patch{Event: ptr(outbox.ActCreated)}); err != nil || w.Event != outbox.ActCreated {
			t.Errorf("admin on the member's registration: %+v %v", w, err)
		}

		// One record per applied change, none for a refused one.
		var rows []audit.Row
		if err := d.Where("action = ?", audit.WebhookUpdated).Order("id").Find(&rows).Error; err != nil {
			t.Fatal(err)
		}
		want := []int64{f.member.UserID, f.admin.UserID}
		if len(rows) != len(want) {
			t.Fatalf("%d %s records, want %d: %+v", len(rows), audit.WebhookUpdated, len(want), rows)
		}
		for i, r := range rows {
			if r.ActorUserID == nil || *r.ActorUserID != want[i] || r.TargetType != audit.TargetWebhook ||
				r.TargetID != strconv.FormatInt(mine, 10) || r.Outcome != audit.Success {
				t.Errorf("record %d: %+v", i, r)
			}
		}
	})
}

func ptr(s string) *string { return &s }

func mustErr(_ *registry.Webhook, err error) error { return err }

// fieldErrors is err's field messages (none when it is not an apperr).
func fieldErrors(err error) map[string][]string {
	var ae *apperr.Error
	if !errors.As(err, &ae) {
		return nil
	}
	return ae.Fields
}
