// Package registry stores webhook registrations and serves the delivery log:
// create, list, read, change, delete, rotate a registration's secret, list
// its deliveries and queue one again. Every query is tenant-scoped through
// tenant.Scope; signing secrets are stored sealed (internal/sealing)
// and leave this package only at creation, at rotation, and when a person
// reveals them after re-authenticating (Reveal, audited).
//
// One file per job: registry.go the store, the registration type and who
// sees what (ownership); registrations.go creating, reading, changing,
// disabling and deleting registrations; target.go the target URL rules;
// secrets.go the signing secrets (rotation, overlap, reveal); deliveries.go
// and log.go the delivery log and queueing deliveries again; testevents.go
// test events; events.go the events API and the read-scope rule.
package registry

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/webhooks/httpclient"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// Webhook is a registration as the API shows it (never with its secret).
type Webhook struct {
	TenantID int64 `gorm:"column:tenant_id"`
	ID       int64 `gorm:"column:id"`
	// Event is the first kind of the subscription (the deprecated single
	// event of the API).
	Event string `gorm:"column:event"`
	// AllEvents and EventTypes are what it subscribes to (Subscription).
	AllEvents                bool       `gorm:"column:all_events"`
	EventTypes               []string   `gorm:"-"`
	Target                   string     `gorm:"column:target"`
	Description              string     `gorm:"column:description"`
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

// Subscription is what the registration receives.
func (w Webhook) Subscription() Subscription {
	return Subscription{EventTypes: w.EventTypes, AllEvents: w.AllEvents}
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

func (s *Store) clock() time.Time { return db.Clock(s.now).Now() }

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

// record writes the audit record of p's change of registration id.
func record(ctx context.Context, tx *gorm.DB, p *auth.Principal, action string, id int64) error {
	typ, tid := audit.Target(audit.TargetWebhook, id)
	return audit.Record(ctx, tx, audit.Entry{Action: action, TargetType: typ, TargetID: tid, Actor: audit.ActorOf(p)})
}

// wakeAfterCommit wakes the delivery workers once tx's transaction has
// committed (the outermost one, when it is a savepoint of an ambient
// transaction): a worker woken before would find nothing to claim.
func (s *Store) wakeAfterCommit(tx *gorm.DB) {
	if s.notifier != nil {
		db.AfterCommit(tx, s.notifier.Notify)
	}
}
