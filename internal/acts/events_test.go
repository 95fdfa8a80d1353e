package acts_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/acts"
	"github.com/finsvc/finsvc/internal/acts/actstest"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/templates"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

func kindCount(t *testing.T, q *gorm.DB, kind string) int64 {
	t.Helper()
	var n int64
	if err := q.Table("events").Where("kind = ?", kind).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// Each change event is written in the change's transaction: inside an
// enclosing transaction that rolls back, the event is there and then gone
// with the change; the same change committed leaves exactly one event of
// its kind, about the act it changed.
func TestChangeEventsShareTheTransaction(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, _ := testdb.NewTenant(t, d, "acme")
		c := actstest.Client(t, d, ctx, "Acme AB")
		tpl := actstest.Template(t, d, ctx, "T",
			actstest.F{Key: "company", Type: "text", Source: templates.SourceClientCompanyName},
			actstest.F{Key: "note", Type: "text", Source: templates.SourceManual})
		p := &auth.Principal{UserID: 1, Role: auth.RoleMember}
		s := acts.NewStore(d, &outbox.Outbox{}, clients.NewStore(d), templates.NewStore(d))
		newAct := func() uuid.UUID {
			a, err := s.Create(ctx, p, c.ID, tpl.ID, "A")
			if err != nil {
				t.Fatal(err)
			}
			return a.Act.UUID
		}
		noteID := func(id uuid.UUID) *int64 {
			a, err := s.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			for _, dp := range a.Data {
				if dp.Key == "note" {
					return &dp.ID
				}
			}
			t.Fatal("no note")
			return nil
		}
		a1, a2, a3 := newAct(), newAct(), newAct()
		note := "checked"
		// Read before the transactions below: inside them, a read with
		// this test's context would leave the transaction (db.ErrEscapedTx).
		note1 := noteID(a1)
		for _, tc := range []struct {
			kind  string
			about uuid.UUID
			run   func(ctx context.Context) error
		}{
			{outbox.ActUpdated, a1, func(ctx context.Context) error { _, err := s.Update(ctx, p, a1, "B"); return err }},
			{outbox.ActDataUpdated, a1, func(ctx context.Context) error {
				_, err := s.WriteData(ctx, p, a1, acts.DataWrite{Items: []acts.DataItem{{ID: note1, Value: &note}}})
				return err
			}},
			{outbox.FetchRequestCompleted, a1, func(ctx context.Context) error {
				a, err := s.Get(ctx, a1)
				if err != nil {
					return err
				}
				_, err = s.CreateRequest(ctx, p, a1, []int64{a.Data[0].ID}) // the built-in company field only
				return err
			}},
			{outbox.ActFinalized, a2, func(ctx context.Context) error { _, err := s.Finalize(ctx, p, a2); return err }},
			{outbox.ActDeleted, a3, func(ctx context.Context) error { return s.Delete(ctx, a3) }},
		} {
			rollback := errors.New("roll back")
			err := d.InTx(ctx, func(ctx db.TxContext, tx *gorm.DB) error {
				if err := tc.run(ctx); err != nil {
					return err
				}
				if n := kindCount(t, tx, tc.kind); n != 1 {
					t.Errorf("%s inside the transaction: %d events", tc.kind, n)
				}
				return rollback
			})
			if !errors.Is(err, rollback) {
				t.Fatalf("%s: InTx = %v", tc.kind, err)
			}
			if n := kindCount(t, d.DB, tc.kind); n != 0 {
				t.Fatalf("%s after the rollback: %d events", tc.kind, n)
			}
			if err := tc.run(ctx); err != nil {
				t.Fatalf("%s: %v", tc.kind, err)
			}
			var payloads []string
			if err := d.Table("events").Where("kind = ?", tc.kind).Pluck("payload", &payloads).Error; err != nil {
				t.Fatal(err)
			}
			if len(payloads) != 1 {
				t.Fatalf("%s committed: %d events", tc.kind, len(payloads))
			}
			var body struct {
				ActUUID uuid.UUID `json:"act_uuid"`
				Act     struct {
					UUID uuid.UUID `json:"uuid"`
				} `json:"act"`
				FetchRequest struct {
					ActUUID uuid.UUID `json:"act_uuid"`
					Status  string    `json:"status"`
				} `json:"fetch_request"`
			}
			if err := json.Unmarshal([]byte(payloads[0]), &body); err != nil {
				t.Fatal(err)
			}
			// Each payload names its act in one of these places (the rest stay zero).
			if got := max(body.ActUUID.String(), body.Act.UUID.String(), body.FetchRequest.ActUUID.String()); got != tc.about.String() {
				t.Errorf("%s is about %s, want %s: %s", tc.kind, got, tc.about, payloads[0])
			}
		}
		// The built-in field's value was already right: no act.data_updated
		// beyond the edit's; duplicating emits act.duplicated only.
		if n := kindCount(t, d.DB, outbox.ActDataUpdated); n != 1 {
			t.Errorf("%d act.data_updated events, want 1", n)
		}
		if _, err := s.Duplicate(ctx, p, a1); err != nil {
			t.Fatal(err)
		}
		if n := kindCount(t, d.DB, outbox.ActCreated); n != 3 {
			t.Errorf("%d act.created events after a duplicate, want 3", n)
		}
	})
}
