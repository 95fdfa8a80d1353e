// Package registry stores webhook registrations and serves the delivery log:
// create, list, read, change, delete, rotate a registration's secret, list
// its deliveries and queue one again. Every query is tenant-scoped through
// tenant.Scope; signing secrets are stored sealed (internal/sealing)
// and leave this package only at creation, at rotation, and when a person
// reveals them after re-authenticating (Reveal, audited).
package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/counts"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/webhooks/httpclient"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
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

// Webhook is a registration as the API shows it (never with its secret).
type Webhook struct {
	TenantID                 int64      `gorm:"column:tenant_id"`
	ID                       int64      `gorm:"column:id"`
	Event                    string     `gorm:"column:event"`
	Target                   string     `gorm:"column:target"`
	Active                   bool       `gorm:"column:active"`
	SecretCiphertext         string     `gorm:"column:secret_ciphertext"`
	PreviousSecretCiphertext *string    `gorm:"column:previous_secret_ciphertext"`
	PreviousSecretExpiresAt  *time.Time `gorm:"column:previous_secret_expires_at"`
	CreatedByUserID          int64      `gorm:"column:created_by_user_id"`
	CreatedByClientID        *string    `gorm:"column:created_by_client_id"`
	DisabledReason           *string    `gorm:"column:disabled_reason"`
	DisabledAt               *time.Time `gorm:"column:disabled_at"`
	// Endpoint health (outbox.RecordHealth keeps it).
	ConsecutiveFailures int        `gorm:"column:consecutive_failures"`
	LastSuccessAt       *time.Time `gorm:"column:last_success_at"`
	LastFailureAt       *time.Time `gorm:"column:last_failure_at"`
	LastFailureReason   *string    `gorm:"column:last_failure_reason"`
	FailingSince        *time.Time `gorm:"column:failing_since"`
	CircuitOpenUntil    *time.Time `gorm:"column:circuit_open_until"`
	CreatedAt           time.Time  `gorm:"column:created_at"`
	UpdatedAt           time.Time  `gorm:"column:updated_at"`
}

// HealthState is the state of the registration's circuit breaker at now.
func (w Webhook) HealthState(now time.Time) outbox.HealthState {
	return outbox.State(w.ConsecutiveFailures, w.CircuitOpenUntil, now)
}

// TableName is the GORM table.
func (Webhook) TableName() string { return "webhooks" }

// Store is the registration store.
type Store struct {
	db           *db.DB
	policy       *auth.Policy
	box          *sealing.Box
	allowPrivate bool
	notifier     outbox.Notifier
	now          func() time.Time
	lookup       httpclient.Lookup
}

// Options configures a Store.
type Options struct {
	// Policy is the operation policy (auth.Policy), which decides whether
	// the caller's role may change registrations at all; without one,
	// every change is refused.
	Policy *auth.Policy
	// AllowPrivate admits http:// and private-address targets
	// (FINSVC_WEBHOOK_ALLOW_PRIVATE; tests and demo only).
	AllowPrivate bool
	// Notifier wakes delivery workers after a redelivery is queued.
	Notifier outbox.Notifier
	// Now replaces time.Now (tests).
	Now func() time.Time
	// Lookup replaces the system resolver for the registration-time
	// address check (tests).
	Lookup httpclient.Lookup
}

// New returns a store sealing secrets with box.
func New(d *db.DB, box *sealing.Box, o Options) *Store {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &Store{db: d, policy: o.Policy, box: box, allowPrivate: o.AllowPrivate, notifier: o.Notifier, now: now, lookup: o.Lookup}
}

// resolveTimeout bounds the registration-time lookup of a target's name.
const resolveTimeout = 2 * time.Second

// checkTarget validates and normalises target (ValidateTarget) and, unless
// private targets are allowed, refuses a name that resolves to an address
// deliveries may not reach: the registration fails now, with a message,
// rather than every delivery later.
func (s *Store) checkTarget(ctx context.Context, target string) (normalized, msg string) {
	normalized, msg = ValidateTarget(target, s.allowPrivate)
	if msg != "" || s.allowPrivate {
		return normalized, msg
	}
	u, err := url.Parse(normalized)
	if err != nil {
		return "", "must be an absolute https:// URL"
	}
	host := u.Hostname()
	if _, err := netip.ParseAddr(host); err == nil {
		return normalized, "" // a literal: ValidateTarget checked it
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	if a, blocked := httpclient.BlockedAddr(ctx, host, s.lookup); blocked {
		return "", fmt.Sprintf("must not point to a private, loopback or link-local address (%s resolves to %s)", host, a)
	}
	return normalized, ""
}

func (s *Store) clock() time.Time { return db.Clock(s.now).Now() }

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

// checkEvent is the rule for the event a registration subscribes to, at
// creation and at a change: one of the subscribable kinds (outbox.Kinds;
// webhook.test is sent only by a test, never subscribed to). It returns
// the field's message, or "".
func checkEvent(event string) string {
	if !outbox.ValidKind(event) {
		return fmt.Sprintf("must be one of %v", outbox.Kinds)
	}
	return ""
}

// Create registers target for event on behalf of p and returns the
// registration with its new secret, shown only now.
func (s *Store) Create(ctx context.Context, p *auth.Principal, event, target string) (w *Webhook, secret string, err error) {
	defer apperr.Wrap(&err, "registry.Create")
	if err := s.mayChange(p, auth.OpCreateWebhook); err != nil {
		return nil, "", err
	}
	fe := apperr.FieldErrors{}
	if msg := checkEvent(event); msg != "" {
		fe.Add("event", msg)
	} else if err := mayReadKind(p, event); err != nil {
		return nil, "", err
	}
	target, msg := s.checkTarget(ctx, target)
	if msg != "" {
		fe.Add("target", msg)
	}
	if err := fe.Err(apperr.Invalid, "The webhook registration is invalid."); err != nil {
		return nil, "", err
	}
	secret, err = sign.NewSecret()
	if err != nil {
		return nil, "", err
	}
	tid := tenant.ID(ctx)
	now := s.clock()
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		id, err := db.NextID(tx, tid, "webhooks")
		if err != nil {
			return err
		}
		ct, err := s.box.Seal(secret, sealing.AD(tid, id))
		if err != nil {
			return err
		}
		w = &Webhook{
			TenantID: tid, ID: id, Event: event, Target: target, Active: true,
			SecretCiphertext: ct, CreatedByUserID: p.UserID,
			CreatedAt: now, UpdatedAt: now,
		}
		if p.ClientID != "" {
			c := p.ClientID
			w.CreatedByClientID = &c
		}
		if err := tx.Create(w).Error; err != nil {
			return err
		}
		return record(ctx, tx, p, audit.WebhookCreated, w.ID)
	})
	if err != nil {
		return nil, "", err
	}
	return w, secret, nil
}

// Ownership: who may see and manage a registration. Every method below
// takes the caller and reads only through visible, so no handler (API or
// page) can forget the rule:
//
//   - an admin sees and manages every registration of the tenant;
//   - a member sees and manages only the registrations it created (a
//     registration's target receives the tenant's data and its secret signs
//     for it: a member must not redirect or take over an admin's);
//   - a viewer sees every registration.
//
// Whether a role may change registrations at all is the operation policy's
// decision (auth.Policy, asked by mayChange), not this package's.
//
// A registration the caller may not see is NotFound, exactly like another
// tenant's, so its existence is not revealed.

// OwnOnly reports whether p sees only the registrations it created (the
// console says so on its list).
func OwnOnly(p *auth.Principal) bool {
	_, only := ownOnly(p)
	return only
}

// ownOnly reports whether p sees only the registrations it created, and
// as which user. A missing or unknown caller sees only what user 0 created:
// nothing.
func ownOnly(p *auth.Principal) (userID int64, only bool) {
	switch {
	case p == nil:
		return 0, true
	case p.Role == auth.RoleMember || !auth.ValidRole(p.Role):
		return p.UserID, true
	}
	return 0, false
}

// visible scopes q to the tenant's registrations p may see.
func visible(ctx context.Context, q *gorm.DB, p *auth.Principal) *gorm.DB {
	q = tenant.Scope(ctx, q)
	if uid, only := ownOnly(p); only {
		q = q.Where("created_by_user_id = ?", uid)
	}
	return q
}

// mayChange asks the operation policy whether p's role allows op (the API
// operation of the change), so that a caller other than the API's
// authorizer cannot skip it.
func (s *Store) mayChange(p *auth.Principal, op auth.Op) error {
	if s.policy == nil {
		return apperr.E(apperr.Forbidden, "webhook registrations cannot be changed: the registry has no operation policy")
	}
	return s.policy.PermitRole(p, op)
}

// List returns a page of the registrations p may see, oldest first.
func (s *Store) List(ctx context.Context, p *auth.Principal, pg page.Request) (ws []Webhook, total int64, err error) {
	defer apperr.Wrap(&err, "registry.List")
	key := counts.Webhooks
	if uid, only := ownOnly(p); only {
		key = counts.WebhooksOf(uid) // the rows visible shows
	}
	if total, err = counts.Total(ctx, s.db.DB, key); err != nil {
		return nil, 0, err
	}
	if pg.Beyond(total) {
		return []Webhook{}, total, nil
	}
	err = visible(ctx, s.db.DB, p).Order("id").Limit(pg.Limit).Offset(pg.Offset()).Find(&ws).Error
	return ws, total, err
}

// Get returns one registration; another tenant's, or one p may not see, is
// NotFound.
func (s *Store) Get(ctx context.Context, p *auth.Principal, id int64) (*Webhook, error) {
	return s.get(ctx, s.db.DB, p, id)
}

func (s *Store) get(ctx context.Context, q *gorm.DB, p *auth.Principal, id int64) (*Webhook, error) {
	var w Webhook
	err := visible(ctx, q, p).Where("id = ?", id).Take(&w).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.Ef(apperr.NotFound, "webhook %d not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("registry: get webhook %d: %w", id, err)
	}
	return &w, nil
}

// Patch is a change of a registration: each field given (non-nil) is
// changed, the others are kept.
type Patch struct {
	// Event is the kind the registration subscribes to from now on, checked
	// as at creation. Deliveries already queued for the previous kind are
	// left as they are (delivered, retried or cancelled as before): a change
	// decides which events are queued for the registration from now on.
	Event *string
	// Target is the new URL, checked and normalised as at creation.
	Target *string
	// Active activates or deactivates the registration.
	Active *bool
}

// Update applies ch. Deactivating cancels the registration's pending
// deliveries; activating clears disabled_reason. A refused field changes
// nothing, and every refused field is named.
func (s *Store) Update(ctx context.Context, p *auth.Principal, id int64, ch Patch) (w *Webhook, err error) {
	defer apperr.Wrap(&err, "registry.Update(%d)", id)
	if err := s.mayChange(p, auth.OpUpdateWebhook); err != nil {
		return nil, err
	}
	event, target, active := ch.Event, ch.Target, ch.Active
	fe := apperr.FieldErrors{}
	if event != nil {
		if msg := checkEvent(*event); msg != "" {
			fe.Add("event", msg)
		} else if err := mayReadKind(p, *event); err != nil {
			return nil, err
		}
	}
	if target != nil {
		norm, msg := s.checkTarget(ctx, *target)
		if msg != "" {
			fe.Add("target", msg)
		}
		target = &norm
	}
	if err := fe.Err(apperr.Invalid, "The webhook registration is invalid."); err != nil {
		return nil, err
	}
	now := s.clock()
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := s.get(ctx, s.db.ForUpdate(tx), p, id)
		if err != nil {
			return err
		}
		set := map[string]any{"updated_at": now}
		if event != nil {
			// Emit selects registrations by their event when it writes an
			// event, so events of the new kind are queued from the commit
			// on; the deliveries already queued (of the old kind) are left
			// alone: the attempts before each one check eligibility, not
			// the event.
			set["event"] = *event
		}
		if target != nil {
			set["target"] = *target
		}
		if active != nil {
			set["active"] = *active
			if *active {
				// Re-enabling starts afresh: no disabled reason, and a
				// closed circuit with no failure run (or the next failure
				// would disable it again at once).
				set["disabled_reason"], set["disabled_at"] = nil, nil
				if !cur.Active {
					set["consecutive_failures"], set["failing_since"], set["circuit_open_until"] = 0, nil, nil
				}
			} else if cur.Active {
				if err := outbox.CancelPending(tx, tenant.ID(ctx), id, "", now); err != nil {
					return err
				}
			}
		}
		if err := tenant.Scope(ctx, tx.Model(&Webhook{})).Where("id = ?", id).Updates(set).Error; err != nil {
			return err
		}
		action := audit.WebhookUpdated
		if active != nil && !*active && cur.Active {
			action = audit.WebhookDisabled
		}
		if err := record(ctx, tx, p, action, id); err != nil {
			return err
		}
		w, err = s.get(ctx, tx, p, id)
		return err
	})
	return w, err
}

// record writes the audit record of p's change of registration id.
func record(ctx context.Context, tx *gorm.DB, p *auth.Principal, action string, id int64) error {
	typ, tid := audit.Target(audit.TargetWebhook, id)
	return audit.Record(ctx, tx, audit.Entry{Action: action, TargetType: typ, TargetID: tid, Actor: audit.ActorOf(p)})
}

// Disable deactivates a registration whose target asked to stop (410
// Gone) or that has failed for outbox.AutoDisableAfter, records why and
// when, and cancels its pending deliveries, inside tx. The
// delivery workers call it across tenants, hence the explicit tenant id.
func Disable(tx *gorm.DB, tenantID, id int64, reason string, now time.Time) error {
	if err := tx.Table("webhooks").Where("tenant_id = ? AND id = ?", tenantID, id).
		Updates(map[string]any{"active": false, "disabled_reason": reason, "disabled_at": now, "updated_at": now}).Error; err != nil {
		return fmt.Errorf("registry: disable webhook %d: %w", id, err)
	}
	typ, target := audit.Target(audit.TargetWebhook, id)
	if err := audit.RecordIn(tx.Statement.Context, tx, tenantID, audit.Entry{
		Action: audit.WebhookDisabled, TargetType: typ, TargetID: target, Actor: audit.SystemActor,
	}); err != nil {
		return err
	}
	return outbox.CancelPending(tx, tenantID, id, "registration disabled: "+reason, now)
}

// Delete removes the registration. Its deliveries go with it (the delivery
// log belongs to the registration), which cancels every pending one.
func (s *Store) Delete(ctx context.Context, p *auth.Principal, id int64) (err error) {
	defer apperr.Wrap(&err, "registry.Delete(%d)", id)
	if err := s.mayChange(p, auth.OpDeleteWebhook); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *gorm.DB) error {
		if _, err := s.get(ctx, s.db.ForUpdate(tx), p, id); err != nil {
			return err
		}
		if err := outbox.DeleteDeliveries(tx, tenant.ID(ctx), id); err != nil {
			return err
		}
		res := tenant.Scope(ctx, tx).Where("id = ?", id).Delete(&Webhook{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return apperr.Ef(apperr.NotFound, "webhook %d not found", id)
		}
		return record(ctx, tx, p, audit.WebhookDeleted, id)
	})
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

// Delivery is one delivery log entry.
type Delivery struct {
	ID              string        `gorm:"column:id"`
	WebhookID       int64         `gorm:"column:webhook_id"`
	EventID         string        `gorm:"column:event_id"`
	Event           string        `gorm:"column:event"`
	Status          outbox.Status `gorm:"column:status"`
	Attempts        int           `gorm:"column:attempts"`
	LastStatusCode  *int          `gorm:"column:last_status_code"`
	LastError       *string       `gorm:"column:last_error"`
	ResponseExcerpt *string       `gorm:"column:response_excerpt"`
	LastAttemptAt   *time.Time    `gorm:"column:last_attempt_at"`
	NextAttemptAt   *time.Time    `gorm:"column:next_attempt_at"`
	CreatedAt       time.Time     `gorm:"column:created_at"`
}

const deliveryColumns = "deliveries.id, deliveries.webhook_id, deliveries.event_id, events.kind AS event, deliveries.status, " +
	"deliveries.attempts, deliveries.last_status_code, deliveries.last_error, deliveries.response_excerpt, " +
	"deliveries.last_attempt_at, deliveries.next_attempt_at, deliveries.created_at"

// deliveries reads the registration's delivery log: the live queue and the
// finished deliveries (the view delivery_log, migration 00090), named
// deliveries in the query.
func (s *Store) deliveries(ctx context.Context, q *gorm.DB, webhookID int64) *gorm.DB {
	return tenant.Scope(ctx, q.Table("delivery_log AS deliveries")).
		Joins("JOIN events ON events.tenant_id = deliveries.tenant_id AND events.id = deliveries.event_id").
		Where("deliveries.webhook_id = ?", webhookID)
}

// Deliveries returns a page of the registration's delivery log, newest
// first.
func (s *Store) Deliveries(ctx context.Context, p *auth.Principal, webhookID int64, pg page.Request) (ds []Delivery, total int64, err error) {
	defer apperr.Wrap(&err, "registry.Deliveries(%d)", webhookID)
	if _, err := s.Get(ctx, p, webhookID); err != nil {
		return nil, 0, err
	}
	if total, err = counts.Total(ctx, s.db.DB, counts.Deliveries(webhookID)); err != nil {
		return nil, 0, err
	}
	if pg.Beyond(total) {
		return []Delivery{}, total, nil
	}
	err = s.deliveries(ctx, s.db.DB, webhookID).Select(deliveryColumns).
		Order("deliveries.created_at DESC, deliveries.id").
		Limit(pg.Limit).Offset(pg.Offset()).Scan(&ds).Error
	return ds, total, err
}

// TestMessage is the message of every webhook.test event.
const TestMessage = "A test event from finsvc: your endpoint received and can verify it."

// Test queues a webhook.test event for the registration alone and returns
// its delivery. Same rule as Redeliver: the caller must be allowed to
// change the registration, and it must be active.
func (s *Store) Test(ctx context.Context, p *auth.Principal, webhookID int64) (d *Delivery, err error) {
	defer apperr.Wrap(&err, "registry.Test(%d)", webhookID)
	return s.TestExample(ctx, p, webhookID, outbox.WebhookTest, nil)
}

// TestExample is Test with an event of kind (one of outbox.Kinds, or
// outbox.WebhookTest for the default test) whose data is example, an
// example of that kind from the event catalog: the registration's endpoint
// receives the event as it would a real one, alone, with a new event id.
// A webhook.test event's data is always the standard one (example is
// ignored).
func (s *Store) TestExample(ctx context.Context, p *auth.Principal, webhookID int64, kind string, example json.RawMessage) (d *Delivery, err error) {
	defer apperr.Wrap(&err, "registry.TestExample(%d, %s)", webhookID, kind)
	var data any = map[string]any{"webhook_id": webhookID, "message": TestMessage}
	if kind != outbox.WebhookTest {
		if !outbox.ValidKind(kind) {
			return nil, apperr.E(apperr.Invalid, "The event type is unknown.").WithField("event", "must be an event type of the catalog")
		}
		if !json.Valid(example) || !bytes.HasPrefix(bytes.TrimSpace(example), []byte("{")) {
			return nil, apperr.E(apperr.Invalid, "The event type has no example to send.").WithField("event", "has no example payload")
		}
		data = example
	}
	return s.queue(ctx, p, auth.OpTestWebhook, webhookID, func(tx *gorm.DB, w *Webhook, now time.Time) (string, error) {
		if !w.Active {
			return "", apperr.E(apperr.Invalid, "The webhook registration is inactive; activate it before testing.").
				WithField("active", "the registration is inactive")
		}
		return outbox.EmitExampleTo(ctx, tx, webhookID, w.CreatedByUserID, kind, data, now)
	})
}

// Redeliver queues the delivery's event again for this registration: the
// same event id and payload, signed afresh, attempted now with a fresh
// retry schedule (attempts restart at 0). A delivery in flight, or one of
// an inactive registration, is refused with 400.
func (s *Store) Redeliver(ctx context.Context, p *auth.Principal, webhookID int64, deliveryID uuid.UUID) (d *Delivery, err error) {
	defer apperr.Wrap(&err, "registry.Redeliver(%d, %s)", webhookID, deliveryID)
	return s.queue(ctx, p, auth.OpRedeliverWebhookDelivery, webhookID, func(tx *gorm.DB, w *Webhook, now time.Time) (string, error) {
		// Not locked (a view over two tables cannot be): the registration
		// is, which serializes redeliveries, and Requeue leaves a delivery
		// that a worker has claimed since alone.
		var cur Delivery
		err := s.deliveries(ctx, tx, webhookID).Select(deliveryColumns).
			Where("deliveries.id = ?", deliveryID.String()).Take(&cur).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return "", apperr.Ef(apperr.NotFound, "delivery %s not found", deliveryID)
		}
		if err != nil {
			return "", err
		}
		if !w.Active {
			return "", apperr.E(apperr.Invalid, "The webhook registration is inactive; activate it before redelivering.")
		}
		if cur.Status == outbox.Delivering {
			return "", apperr.E(apperr.Invalid, "An attempt of this delivery is in flight; try again when it has finished.")
		}
		return deliveryID.String(), outbox.Requeue(tx, tenant.ID(ctx), webhookID, deliveryID.String(), now)
	})
}

// queue is what queueing a delivery by hand takes: the caller may change
// the registration, which stays locked while fn queues a delivery and
// returns its id; the delivery is read back, and the workers are woken
// once it has committed.
func (s *Store) queue(ctx context.Context, p *auth.Principal, op auth.Op, webhookID int64, fn func(tx *gorm.DB, w *Webhook, now time.Time) (string, error)) (*Delivery, error) {
	if err := s.mayChange(p, op); err != nil {
		return nil, err
	}
	now := s.clock()
	var out Delivery
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		w, err := s.get(ctx, s.db.ForUpdate(tx), p, webhookID)
		if err != nil {
			return err
		}
		id, err := fn(tx, w, now)
		if err != nil {
			return err
		}
		s.wakeAfterCommit(tx)
		return s.deliveries(ctx, tx, webhookID).Select(deliveryColumns).Where("deliveries.id = ?", id).Take(&out).Error
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Events returns a page of the tenant's events p may see (outbox.ListEvents):
// a webhook.test event is listed only to those who may see its
// registration, the same rule as the registrations' own (a member sees the
// registrations they created), and an event only to a token that may read
// the object it carries (readableKinds).
func (s *Store) Events(ctx context.Context, p *auth.Principal, f outbox.EventFilter) (_ []outbox.Stored, more bool, err error) {
	defer apperr.Wrap(&err, "registry.Events")
	if uid, only := ownOnly(p); only {
		f.OnlyUser = &uid
	}
	f.Kinds = readableKinds(p)
	return outbox.ListEvents(ctx, s.db.DB, f)
}

// Event returns one of the tenant's events p may see; any other is
// NotFound.
func (s *Store) Event(ctx context.Context, p *auth.Principal, id uuid.UUID) (_ *outbox.Stored, err error) {
	defer apperr.Wrap(&err, "registry.Event(%s)", id)
	var only *int64
	if uid, o := ownOnly(p); o {
		only = &uid
	}
	return outbox.GetEvent(ctx, s.db.DB, id, only, readableKinds(p))
}

// Scopes bound what events reveal: an event carries its object (a client,
// an act), so a token reads it, or subscribes a registration to its kind,
// only when it also holds the read scope of that object, the spec's table
// (outbox.ReadScope, derived from DeliveryEventKind's x-finsvc-read-scope).
// A signed-in user in the console acts with their role and no app's scopes
// (no ClientID): every role reads, so the table does not narrow them.

// readableKinds returns the kinds whose events p's token may read, or nil
// when the scopes narrow nothing.
func readableKinds(p *auth.Principal) []string {
	if p == nil {
		return []string{}
	}
	if p.ClientID == "" {
		return nil
	}
	kinds := []string{}
	for _, k := range slices.Sorted(maps.Keys(outbox.ReadScope)) {
		if p.HasScope(outbox.ReadScope[k]) {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == len(outbox.ReadScope) {
		return nil
	}
	return kinds
}

// mayReadKind refuses a registration for kind to a token without the read
// scope of kind's object.
func mayReadKind(p *auth.Principal, kind string) error {
	if p == nil {
		return apperr.E(apperr.Unauthenticated, "authentication required")
	}
	sc, ok := outbox.ReadScope[kind]
	if !ok {
		return apperr.Ef(apperr.Forbidden, "no read scope is declared for %s events", kind)
	}
	if p.ClientID != "" && !p.HasScope(sc) {
		return apperr.Ef(apperr.Forbidden, "token lacks the %s scope that %s events need", sc, kind)
	}
	return nil
}

// DeliveryDetail is one delivery with its event's payload and every
// attempt made, oldest first (redeliveries included).
type DeliveryDetail struct {
	Delivery
	Payload    string                   `gorm:"column:payload"`
	OccurredAt time.Time                `gorm:"column:occurred_at"`
	Attempts   []outbox.RecordedAttempt `gorm:"-"`
}

// DeliveryDetail returns the registration's delivery deliveryID with its
// payload and attempts, to those who may see the registration.
func (s *Store) DeliveryDetail(ctx context.Context, p *auth.Principal, webhookID int64, deliveryID uuid.UUID) (d *DeliveryDetail, err error) {
	defer apperr.Wrap(&err, "registry.DeliveryDetail(%d, %s)", webhookID, deliveryID)
	if _, err := s.Get(ctx, p, webhookID); err != nil {
		return nil, err
	}
	var out DeliveryDetail
	err = s.deliveries(ctx, s.db.DB, webhookID).Select(deliveryColumns+", events.payload, events.occurred_at").
		Where("deliveries.id = ?", deliveryID.String()).Take(&out).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.Ef(apperr.NotFound, "delivery %s not found", deliveryID)
	}
	if err != nil {
		return nil, err
	}
	if out.Attempts, err = outbox.Attempts(ctx, s.db.DB, tenant.ID(ctx), webhookID, out.ID); err != nil {
		return nil, err
	}
	return &out, nil
}

// PendingDeliveries counts the registration's deliveries that still wait
// for an attempt or have one in flight: what disabling or deleting it
// cancels.
func (s *Store) PendingDeliveries(ctx context.Context, p *auth.Principal, webhookID int64) (n int64, err error) {
	defer apperr.Wrap(&err, "registry.PendingDeliveries(%d)", webhookID)
	if _, err := s.Get(ctx, p, webhookID); err != nil {
		return 0, err
	}
	return outbox.LiveCount(ctx, s.db.DB, tenant.ID(ctx), webhookID)
}

// ReplayLimit is the most failed deliveries one ReplayFailed queues again.
const ReplayLimit = 1000

// ReplayFailed queues again every failed delivery of the registration
// created since since (at most ReplayLimit, oldest first), as Redeliver
// does one, and returns how many. Same rules as Redeliver: the caller may
// change the registration, and it must be active.
func (s *Store) ReplayFailed(ctx context.Context, p *auth.Principal, webhookID int64, since time.Time) (n int, err error) {
	defer apperr.Wrap(&err, "registry.ReplayFailed(%d)", webhookID)
	if err := s.mayChange(p, auth.OpRedeliverWebhookDelivery); err != nil {
		return 0, err
	}
	now := s.clock()
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		w, err := s.get(ctx, s.db.ForUpdate(tx), p, webhookID)
		if err != nil {
			return err
		}
		if !w.Active {
			return apperr.E(apperr.Invalid, "The webhook registration is inactive; activate it before replaying.")
		}
		var ids []string
		err = tenant.Scope(ctx, tx.Table("delivery_history")).
			Where("webhook_id = ? AND status = ? AND created_at >= ?", webhookID, string(outbox.Failed), since.UTC()).
			Order("created_at").Limit(ReplayLimit).Pluck("id", &ids).Error
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := outbox.Requeue(tx, tenant.ID(ctx), webhookID, id, now); err != nil {
				return err
			}
		}
		n = len(ids)
		if n > 0 {
			s.wakeAfterCommit(tx)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// wakeAfterCommit wakes the delivery workers once tx's transaction has
// committed (the outermost one, when it is a savepoint of an ambient
// transaction): a worker woken before would find nothing to claim.
func (s *Store) wakeAfterCommit(tx *gorm.DB) {
	if s.notifier != nil {
		db.AfterCommit(tx, s.notifier.Notify)
	}
}
