package registry

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/pkg/webhooks/sign"
)

// Rotation overlaps: how long the previous secret keeps signing after a
// rotation, so that receivers can switch secrets without losing
// deliveries. The caller picks one of RotationOverlaps (the API's
// previous_secret_expires_in enum, the console's choices); 0 stops the
// previous secret at once, for a secret that leaked.
const (
	OverlapNone time.Duration = 0
	OverlapDay                = 24 * time.Hour
	OverlapWeek               = 7 * 24 * time.Hour
	// DefaultRotationOverlap is the overlap of a rotation that chose none.
	DefaultRotationOverlap = OverlapDay
)

// RotationOverlaps are the overlaps a rotation may choose, shortest first.
var RotationOverlaps = []time.Duration{OverlapNone, OverlapDay, OverlapWeek}

// ValidOverlap reports whether d is one of RotationOverlaps.
func ValidOverlap(d time.Duration) bool { return slices.Contains(RotationOverlaps, d) }

// Secrets returns the registration's currently valid signing secrets: the
// current one and, during a rotation overlap, the previous one. Delivery
// workers call it for every attempt.
func (s *Store) Secrets(w *Webhook, now time.Time) ([]string, error) {
	return OpenSecrets(s.box, w, now)
}

// SealedColumns are the registrations' sealed columns, for `finsvc secret
// reseal` and `finsvc secret status`: the secret and the previous secret
// of an overlap, both bound to the registration (sealing.AD).
func SealedColumns() []sealing.Column {
	ad := func(k []string) []byte {
		tid, _ := strconv.ParseInt(k[0], 10, 64)
		id, _ := strconv.ParseInt(k[1], 10, 64)
		return sealing.AD(tid, id)
	}
	keys := []string{"tenant_id", "id"}
	return []sealing.Column{
		{Table: "webhooks", Name: "secret_ciphertext", Keys: keys, AD: ad},
		{Table: "webhooks", Name: "previous_secret_ciphertext", Keys: keys, AD: ad},
	}
}

// OpenSecrets is Secrets for callers holding only the box.
func OpenSecrets(box *sealing.Box, w *Webhook, now time.Time) ([]string, error) {
	ad := sealing.AD(w.TenantID, w.ID)
	cur, err := box.Open(w.SecretCiphertext, ad)
	if err != nil {
		return nil, fmt.Errorf("webhook %d: %w", w.ID, err)
	}
	out := []string{cur}
	if w.PreviousSecretCiphertext != nil && w.PreviousSecretExpiresAt != nil && now.Before(*w.PreviousSecretExpiresAt) {
		prev, err := box.Open(*w.PreviousSecretCiphertext, ad)
		if err != nil {
			return nil, fmt.Errorf("webhook %d previous secret: %w", w.ID, err)
		}
		out = append(out, prev)
	}
	return out, nil
}

// Rotate issues a new secret. The current one becomes the previous secret
// and keeps signing for overlap (one of RotationOverlaps; 0: it stops now
// and no previous secret is kept); a still-valid older previous secret is
// dropped (only two secrets ever sign).
func (s *Store) Rotate(ctx context.Context, p *auth.Principal, id int64, overlap time.Duration) (w *Webhook, secret string, err error) {
	defer apperr.Wrap(&err, "registry.Rotate(%d)", id)
	if err := s.mayChange(p, auth.OpRotateWebhookSecret); err != nil {
		return nil, "", err
	}
	if !ValidOverlap(overlap) {
		return nil, "", apperr.E(apperr.Invalid, "The overlap of the secrets is not one of the choices.").
			WithField("previous_secret_expires_in", "must be 0, 24 hours or 7 days")
	}
	secret, err = sign.NewSecret()
	if err != nil {
		return nil, "", err
	}
	tid := tenant.ID(ctx)
	now := s.clock()
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := s.get(ctx, s.db.ForUpdate(tx), p, id)
		if err != nil {
			return err
		}
		ct, err := s.box.Seal(secret, sealing.AD(tid, id))
		if err != nil {
			return err
		}
		set := map[string]any{
			"secret_ciphertext":          ct,
			"previous_secret_ciphertext": nil,
			"previous_secret_expires_at": nil,
			"updated_at":                 now,
		}
		if overlap > 0 {
			set["previous_secret_ciphertext"], set["previous_secret_expires_at"] = cur.SecretCiphertext, now.Add(overlap)
		}
		if err := tenant.Scope(ctx, tx.Model(&Webhook{})).Where("id = ?", id).Updates(set).Error; err != nil {
			return err
		}
		if err := record(ctx, tx, p, audit.WebhookSecretRotated, id); err != nil {
			return err
		}
		w, err = s.get(ctx, tx, p, id)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return w, secret, nil
}

// Revealed is a registration's signing secrets as Reveal shows them.
type Revealed struct {
	// Current signs every delivery.
	Current string
	// Previous signs beside it until PreviousExpiresAt, during a rotation
	// overlap; "" (and nil) when no previous secret signs any more.
	Previous          string
	PreviousExpiresAt *time.Time
}

// Reveal returns the registration's signing secrets to a caller who may
// rotate them (the operation policy's rule for rotateWebhookSecret, and
// ownership: a member reveals only the registrations it created), once
// proof has accepted the caller's re-authentication (the console: the
// password typed again). The reveal is recorded in the audit log in the
// transaction that reads the secrets (never the secrets themselves).
//
// proof runs after the rules, so that a refused role or an invisible
// registration is refused before any password is checked, and outside
// the transaction (checking a password is slow). Its refusal of kind
// Unauthenticated (a wrong password) is recorded as a failed reveal and
// returned; any other error (too many attempts, an outage) is returned
// unrecorded, like a sign-in refused before its check.
func (s *Store) Reveal(ctx context.Context, p *auth.Principal, id int64, proof func(context.Context) error) (out *Revealed, err error) {
	defer apperr.Wrap(&err, "registry.Reveal(%d)", id)
	if err := s.mayChange(p, auth.OpRotateWebhookSecret); err != nil {
		return nil, err
	}
	if _, err := s.get(ctx, s.db.DB, p, id); err != nil {
		return nil, err
	}
	if err := proof(ctx); err != nil {
		if apperr.Is(err, apperr.Unauthenticated) {
			typ, tid := audit.Target(audit.TargetWebhook, id)
			if rerr := audit.RecordAlone(ctx, s.db, audit.Entry{Action: audit.WebhookSecretRevealed, TargetType: typ, TargetID: tid,
				Outcome: audit.Failure, Actor: audit.ActorOf(p)}); rerr != nil {
				return nil, rerr
			}
		}
		return nil, err
	}
	now := s.clock()
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		w, err := s.get(ctx, tx, p, id)
		if err != nil {
			return err
		}
		// The secrets that sign now, as the delivery worker reads them.
		secrets, err := s.Secrets(w, now)
		if err != nil {
			return err
		}
		out = &Revealed{Current: secrets[0]}
		if len(secrets) > 1 {
			at := w.PreviousSecretExpiresAt.UTC()
			out.Previous, out.PreviousExpiresAt = secrets[1], &at
		}
		return record(ctx, tx, p, audit.WebhookSecretRevealed, id)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Overlap is when the registration's previous secret stops signing, during
// a rotation's overlap at now; nil when only the current secret signs.
func (w Webhook) Overlap(now time.Time) *time.Time {
	if w.PreviousSecretCiphertext == nil || w.PreviousSecretExpiresAt == nil || !now.Before(*w.PreviousSecretExpiresAt) {
		return nil
	}
	at := w.PreviousSecretExpiresAt.UTC()
	return &at
}

// EndOverlap makes the registration's previous secret stop signing now (a
// rotation's overlap ended early: the old secret may have leaked, or the
// receiver has switched). The rules are Rotate's. Without a running
// overlap it changes nothing and records nothing.
func (s *Store) EndOverlap(ctx context.Context, p *auth.Principal, id int64) (w *Webhook, err error) {
	defer apperr.Wrap(&err, "registry.EndOverlap(%d)", id)
	if err := s.mayChange(p, auth.OpRotateWebhookSecret); err != nil {
		return nil, err
	}
	now := s.clock()
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := s.get(ctx, s.db.ForUpdate(tx), p, id)
		if err != nil {
			return err
		}
		if cur.Overlap(now) == nil {
			w = cur
			return nil
		}
		if err := tenant.Scope(ctx, tx.Model(&Webhook{})).Where("id = ?", id).Updates(map[string]any{
			"previous_secret_ciphertext": nil, "previous_secret_expires_at": nil, "updated_at": now,
		}).Error; err != nil {
			return err
		}
		if err := record(ctx, tx, p, audit.WebhookSecretOverlapEnded, id); err != nil {
			return err
		}
		w, err = s.get(ctx, tx, p, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}
