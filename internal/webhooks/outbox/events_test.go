package outbox_test

import (
	"errors"
	"testing"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// An event is listed once its transaction commits, numbered after every
// event committed before it; a rolled-back change leaves nothing to list,
// and a restricted event (a webhook.test of another user's registration)
// is hidden from that user.
func TestListEventsCommitOrderAndRollback(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		ob := &outbox.Outbox{}
		emit := func(fail bool) error {
			return d.Tx(f.ctx, func(tx *gorm.DB) error {
				if _, err := ob.Emit(f.ctx, tx, outbox.Event{Kind: outbox.ActCreated, Data: map[string]any{"n": 1}}); err != nil {
					return err
				}
				if fail {
					return errors.New("the change fails")
				}
				return nil
			})
		}
		if err := emit(false); err != nil {
			t.Fatal(err)
		}
		if err := emit(true); err == nil {
			t.Fatal("rolled-back change succeeded")
		}
		if err := emit(false); err != nil {
			t.Fatal(err)
		}
		hook := f.webhook(outbox.ActCreated, "https://example.com/h", true, f.userID)
		if err := d.Tx(f.ctx, func(tx *gorm.DB) error {
			_, err := outbox.EmitTo(f.ctx, tx, hook, f.userID, map[string]any{"webhook_id": hook}, tx.NowFunc())
			return err
		}); err != nil {
			t.Fatal(err)
		}

		all, more, err := outbox.ListEvents(f.ctx, d.DB, outbox.EventFilter{})
		if err != nil || more || len(all) != 3 {
			t.Fatalf("ListEvents = %d events, more %v, %v; want 3", len(all), more, err)
		}
		if all[0].Kind != outbox.WebhookTest || all[0].Seq <= all[1].Seq || all[1].Seq <= all[2].Seq {
			t.Fatalf("not newest first by seq: %+v", all)
		}
		other := f.userID + 1000
		mine, _, err := outbox.ListEvents(f.ctx, d.DB, outbox.EventFilter{OnlyUser: &other})
		if err != nil || len(mine) != 2 {
			t.Fatalf("another user lists %d events, %v; want 2", len(mine), err)
		}
		owner, _, _ := outbox.ListEvents(f.ctx, d.DB, outbox.EventFilter{OnlyUser: &f.userID})
		if len(owner) != 3 {
			t.Fatalf("the owner lists %d events, want 3", len(owner))
		}
		var rows int64
		if err := d.Table("events").Count(&rows).Error; err != nil || rows != 3 {
			t.Fatalf("events rows %d, %v; the rolled-back one must leave nothing", rows, err)
		}
		// Paging: one by one back, then forward again.
		id := all[0].ID
		var back []string
		for {
			u := mustUUID(t, id)
			p, more, err := outbox.ListEvents(f.ctx, d.DB, outbox.EventFilter{After: &u, Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(p) == 0 {
				break
			}
			back = append(back, p[0].ID)
			id = p[0].ID
			if !more {
				break
			}
		}
		if len(back) != 2 || back[0] != all[1].ID || back[1] != all[2].ID {
			t.Fatalf("paging back %v; list %+v", back, all)
		}
	})
}

func mustUUID(t *testing.T, s string) uuid.UUID {
	t.Helper()
	u, err := uuid.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// A test event of a real kind (example data sent to one endpoint from the
// console) is queued for that endpoint like any event, but the events API
// never offers it: an integrator reconciling from GET /events must not
// process data that describes nothing that happened. A webhook.test event
// stays listed to those who may see its registration.
func TestExampleEventsAreNotListed(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		hook := f.webhook(outbox.ActUpdated, "https://example.com/h", true, f.userID)
		var example, test string
		if err := d.Tx(f.ctx, func(tx *gorm.DB) error {
			var err error
			if example, err = outbox.EmitExampleTo(f.ctx, tx, hook, f.userID, outbox.ActUpdated, map[string]any{"uuid": "x"}, tx.NowFunc()); err != nil {
				return err
			}
			test, err = outbox.EmitTo(f.ctx, tx, hook, f.userID, map[string]any{"webhook_id": hook}, tx.NowFunc())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		var queued int64
		if err := d.Table("deliveries").Where("id IN ?", []string{example, test}).Count(&queued).Error; err != nil || queued != 2 {
			t.Fatalf("queued %d of the two deliveries: %v", queued, err)
		}
		all, _, err := outbox.ListEvents(f.ctx, d.DB, outbox.EventFilter{})
		if err != nil || len(all) != 1 || all[0].Kind != outbox.WebhookTest {
			t.Fatalf("listed %+v, %v; want the webhook.test event alone", all, err)
		}
		var exampleEvent string
		if err := d.Table("deliveries").Select("event_id").Where("id = ?", example).Scan(&exampleEvent).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := outbox.GetEvent(f.ctx, d.DB, uuid.MustParse(exampleEvent), nil, nil); !apperr.Is(err, apperr.NotFound) {
			t.Fatalf("GET /events/{id} of the example: %v, want NotFound", err)
		}
	})
}
