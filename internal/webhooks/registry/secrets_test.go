package registry_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
)

// TestRotateOverlaps: a rotation keeps the previous secret for exactly the
// overlap chosen (none for 0: no previous secret is stored), and refuses
// any overlap but the three choices, changing nothing.
func TestRotateOverlaps(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newLogFixture(t, d, "acme")
		id := f.webhook(f.admin)
		for _, overlap := range registry.RotationOverlaps {
			before := time.Now().UTC().Truncate(time.Microsecond)
			w, secret, err := f.store.Rotate(f.ctx, f.admin, id, overlap)
			if err != nil {
				t.Fatal(err)
			}
			after := time.Now().UTC()
			switch {
			case overlap == 0 && (w.PreviousSecretExpiresAt != nil || w.PreviousSecretCiphertext != nil):
				t.Errorf("overlap 0: previous secret kept until %v", w.PreviousSecretExpiresAt)
			case overlap > 0 && (w.PreviousSecretExpiresAt == nil || w.PreviousSecretCiphertext == nil ||
				w.PreviousSecretExpiresAt.Before(before.Add(overlap)) || w.PreviousSecretExpiresAt.After(after.Add(overlap))):
				t.Errorf("overlap %v: previous secret until %v, want %v", overlap, w.PreviousSecretExpiresAt, before.Add(overlap))
			}
			got, err := f.store.Secrets(w, after)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: 1, false: 2}[overlap == 0]; len(got) != want || got[0] != secret {
				t.Errorf("overlap %v: %d secrets sign, want %d with the new one first", overlap, len(got), want)
			}
		}
		w, _ := f.store.Get(f.ctx, f.admin, id)
		for _, bad := range []time.Duration{time.Hour, -24 * time.Hour, 30 * 24 * time.Hour, 24*time.Hour + time.Second} {
			_, _, err := f.store.Rotate(f.ctx, f.admin, id, bad)
			if !apperr.Is(err, apperr.Invalid) {
				t.Errorf("overlap %v: %v, want Invalid", bad, err)
			}
			if now, _ := f.store.Get(f.ctx, f.admin, id); now.SecretCiphertext != w.SecretCiphertext {
				t.Errorf("overlap %v: the refused rotation changed the secret", bad)
			}
		}
	})
}

// TestReveal: whoever may rotate a registration's secret reveals the
// secrets that sign (the previous one with its end during an overlap),
// once proof accepts; the reveal is recorded (success, or failure for a
// wrong password) with the actor and the registration, and never the
// secret. A viewer is refused and a member's view of another's
// registration is NotFound before proof is asked.
func TestReveal(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newLogFixture(t, d, "acme")
		id := f.webhook(f.admin)
		mine := f.webhook(f.member)
		w, current, err := f.store.Rotate(f.ctx, f.admin, id, registry.OverlapWeek)
		if err != nil {
			t.Fatal(err)
		}
		ok := func(context.Context) error { return nil }
		got, err := f.store.Reveal(f.ctx, f.admin, id, ok)
		if err != nil {
			t.Fatal(err)
		}
		signing, err := f.store.Secrets(w, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if got.Current != current || got.Current != signing[0] || got.Previous != signing[1] || got.PreviousExpiresAt == nil ||
			!got.PreviousExpiresAt.Equal(*w.PreviousSecretExpiresAt) {
			t.Fatalf("revealed %+v, want the signing secrets %v until %v", got, signing, w.PreviousSecretExpiresAt)
		}

		asked := false
		proof := func(context.Context) error { asked = true; return nil }
		viewer := &auth.Principal{TenantID: f.admin.TenantID, UserID: f.admin.UserID, Role: auth.RoleViewer}
		if _, err := f.store.Reveal(f.ctx, viewer, id, proof); !apperr.Is(err, apperr.Forbidden) || asked {
			t.Errorf("viewer: %v (proof asked: %v)", err, asked)
		}
		if _, err := f.store.Reveal(f.ctx, f.member, id, proof); !apperr.Is(err, apperr.NotFound) || asked {
			t.Errorf("member, another's registration: %v (proof asked: %v)", err, asked)
		}
		wrong := func(context.Context) error {
			return apperr.E(apperr.Unauthenticated, "the password is wrong").WithField("password", "is not the one you sign in with")
		}
		if _, err := f.store.Reveal(f.ctx, f.member, mine, wrong); !apperr.Is(err, apperr.Unauthenticated) {
			t.Errorf("wrong password: %v", err)
		}
		throttled := func(context.Context) error { return apperr.E(apperr.TooManyRequests, "Too many attempts.") }
		if _, err := f.store.Reveal(f.ctx, f.member, mine, throttled); !apperr.Is(err, apperr.TooManyRequests) {
			t.Errorf("throttled: %v", err)
		}
		if got, err := f.store.Reveal(f.ctx, f.member, mine, ok); err != nil || got.Previous != "" || got.PreviousExpiresAt != nil {
			t.Errorf("member, own registration without a rotation: %+v %v", got, err)
		}

		var rows []audit.Row
		if err := d.Where("action = ?", audit.WebhookSecretRevealed).Order("id DESC").Find(&rows).Error; err != nil {
			t.Fatal(err)
		}
		type rec struct {
			user    int64
			target  string
			outcome string
		}
		want := []rec{ // newest first
			{f.member.UserID, strconv.FormatInt(mine, 10), audit.Success},
			{f.member.UserID, strconv.FormatInt(mine, 10), audit.Failure},
			{f.admin.UserID, strconv.FormatInt(id, 10), audit.Success},
		}
		if len(rows) != len(want) {
			t.Fatalf("%d reveal records, want %d: %+v", len(rows), len(want), rows)
		}
		for i, r := range rows {
			if r.ActorType != audit.ActorUser || r.ActorUserID == nil || *r.ActorUserID != want[i].user ||
				r.TargetType != audit.TargetWebhook || r.TargetID != want[i].target || r.Outcome != want[i].outcome {
				t.Errorf("record %d: %+v, want %+v", i, r, want[i])
			}
		}
		// No secret in any record, of any action.
		var all []audit.Row
		if err := d.Find(&all).Error; err != nil {
			t.Fatal(err)
		}
		for _, r := range all {
			for _, s := range append(signing, got.Current) {
				if strings.Contains(r.TargetID+r.UserAgent+r.RequestID+r.SourceAddr+r.Action, s) {
					t.Errorf("record %d holds a secret", r.ID)
				}
			}
		}
	})
}

// TestEndOverlap: ending a rotation's overlap stops the previous secret at
// once (one secret signs, Overlap is nil), is recorded once, and changes
// nothing without an overlap; a viewer is refused.
func TestEndOverlap(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newLogFixture(t, d, "acme")
		id := f.webhook(f.admin)
		w, secret, err := f.store.Rotate(f.ctx, f.admin, id, registry.OverlapWeek)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		if w.Overlap(now) == nil {
			t.Fatal("no overlap after a rotation of a week")
		}
		viewer := *f.admin
		viewer.Role = "viewer"
		if _, err := f.store.EndOverlap(f.ctx, &viewer, id); !apperr.Is(err, apperr.Forbidden) {
			t.Errorf("viewer: %v", err)
		}
		w, err = f.store.EndOverlap(f.ctx, f.admin, id)
		if err != nil {
			t.Fatal(err)
		}
		if w.Overlap(now) != nil || w.PreviousSecretCiphertext != nil {
			t.Fatalf("after ending it: overlap until %v", w.Overlap(now))
		}
		if got, err := f.store.Secrets(w, now); err != nil || len(got) != 1 || got[0] != secret {
			t.Fatalf("secrets after ending the overlap: %d, %v", len(got), err)
		}
		if _, err := f.store.EndOverlap(f.ctx, f.admin, id); err != nil {
			t.Fatal(err)
		}
		var n int64
		d.Table("audit_log").Where("action = ?", "webhook.secret_overlap_ended").Count(&n)
		if n != 1 {
			t.Errorf("%d records, want 1", n)
		}
	})
}
