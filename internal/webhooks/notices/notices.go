// Package notices tells a tenant's admins by email when one of its webhook
// endpoints starts failing and when the service disables it (a 410, or
// failures for outbox.AutoDisableAfter): one message per state change,
// with a link to the endpoint's page in the console. The delivery workers
// keep the health it reads (outbox.RecordHealth, registry.Disable); a
// loop compares it with what the admins were last told (webhooks.
// notice_state) and claims each notice with a conditional UPDATE, so that
// however many replicas run the loop, a change is mailed once.
package notices

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/janitor"
)

// Notice states (webhooks.notice_state): what the admins were last told.
const (
	told         = ""         // nothing, or the endpoint is healthy again
	toldFailing  = "failing"  // it started failing
	toldDisabled = "disabled" // the service disabled it
)

// Interval is how often the loop looks for changes.
const Interval = 30 * time.Second

// Message is one email.
type Message struct {
	To      []string
	Subject string
	Body    string
}

// Mailer sends a message (SMTP in production, NewSMTP).
type Mailer interface {
	Send(ctx context.Context, m Message) error
}

// Notices is the loop. ConsoleURL makes the link to a tenant's endpoint
// page from its slug and the registration id.
type Notices struct {
	db         *db.DB
	mail       Mailer
	consoleURL func(slug string, id int64) string
	log        *slog.Logger
	loop       *janitor.Loop
}

// New returns the notices of d's endpoints, sent through mail.
func New(d *db.DB, mail Mailer, consoleURL func(slug string, id int64) string, log *slog.Logger) *Notices {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Notices{db: d, mail: mail, consoleURL: consoleURL, log: log}
}

// endpoint is a registration whose state differs from what its tenant's
// admins were told.
type endpoint struct {
	TenantID          int64   `gorm:"column:tenant_id"`
	ID                int64   `gorm:"column:id"`
	Slug              string  `gorm:"column:slug"`
	Target            string  `gorm:"column:target"`
	Description       string  `gorm:"column:description"`
	Active            bool    `gorm:"column:active"`
	DisabledReason    *string `gorm:"column:disabled_reason"`
	LastFailureReason *string `gorm:"column:last_failure_reason"`
	NoticeState       string  `gorm:"column:notice_state"`
}

// state is what the admins should have been told of e.
func (e endpoint) state() string {
	switch {
	case !e.Active && e.DisabledReason != nil:
		return toldDisabled
	case e.Active:
		return toldFailing // the query selects only failing ones
	}
	return told
}

// RunOnce sends the notices due now and returns how many messages went.
// An endpoint healthy again is forgotten (its next failure is news); a
// change is claimed before its message is sent and released when sending
// fails, so that the next run tries again.
func (n *Notices) RunOnce(ctx context.Context) (sent int, err error) {
	q := n.db.WithContext(ctx)
	if err := q.Exec(`UPDATE webhooks SET notice_state = ? WHERE notice_state <> ? AND active AND consecutive_failures = 0`, told, told).Error; err != nil {
		return 0, fmt.Errorf("notices: forget the endpoints healthy again: %w", err)
	}
	var due []endpoint
	err = q.Raw(`SELECT webhooks.tenant_id, webhooks.id, tenants.slug, webhooks.target, webhooks.description, webhooks.active,
  webhooks.disabled_reason, webhooks.last_failure_reason, webhooks.notice_state
FROM webhooks JOIN tenants ON tenants.id = webhooks.tenant_id
WHERE (webhooks.active AND webhooks.consecutive_failures > 0 AND webhooks.notice_state = ?)
   OR (NOT webhooks.active AND webhooks.disabled_reason IS NOT NULL AND webhooks.notice_state <> ?)
ORDER BY webhooks.tenant_id, webhooks.id`, told, toldDisabled).Scan(&due).Error
	if err != nil {
		return 0, fmt.Errorf("notices: find the changes: %w", err)
	}
	for _, e := range due {
		ok, err := n.notify(ctx, e)
		if err != nil {
			n.log.ErrorContext(ctx, "webhook failure notice", "tenant_id", e.TenantID, "webhook_id", e.ID, "err", err)
			continue
		}
		if ok {
			sent++
		}
	}
	return sent, nil
}

// notify claims e's change and mails it to the tenant's admins.
func (n *Notices) notify(ctx context.Context, e endpoint) (bool, error) {
	q := n.db.WithContext(ctx)
	to := e.state()
	res := q.Exec(`UPDATE webhooks SET notice_state = ? WHERE tenant_id = ? AND id = ? AND notice_state = ?`, to, e.TenantID, e.ID, e.NoticeState)
	if res.Error != nil {
		return false, res.Error
	}
	if res.RowsAffected == 0 {
		return false, nil // another replica's, or changed meanwhile
	}
	var admins []string
	if err := q.Raw(`SELECT email FROM users WHERE tenant_id = ? AND role = 'admin' AND deactivated_at IS NULL ORDER BY id`, e.TenantID).
		Scan(&admins).Error; err != nil || len(admins) == 0 {
		return false, err // nobody to tell: the claim stands
	}
	if err := n.mail.Send(ctx, message(e, to, admins, n.consoleURL(e.Slug, e.ID))); err != nil {
		// Released, to be tried again by the next run.
		q.Exec(`UPDATE webhooks SET notice_state = ? WHERE tenant_id = ? AND id = ? AND notice_state = ?`, e.NoticeState, e.TenantID, e.ID, to)
		return false, fmt.Errorf("send: %w", err)
	}
	n.log.InfoContext(ctx, "webhook failure notice sent", "tenant_id", e.TenantID, "webhook_id", e.ID, "state", to, "recipients", len(admins))
	return true, nil
}

// message is the email of e's change to state.
func message(e endpoint, state string, to []string, link string) Message {
	name := fmt.Sprintf("Webhook %d", e.ID)
	if e.Description != "" {
		name += " (" + e.Description + ")"
	}
	var b strings.Builder
	var subject string
	if state == toldDisabled {
		subject = name + " was disabled"
		fmt.Fprintf(&b, "%s, which delivers to %s, was disabled by finsvc: %s.\n\n", name, e.Target, deref(e.DisabledReason))
		b.WriteString("It receives no events until someone enables it again; events meanwhile are not sent later.\n")
	} else {
		subject = name + " is failing"
		fmt.Fprintf(&b, "Deliveries to %s (%s) have started failing: %s.\n\n", e.Target, name, deref(e.LastFailureReason))
		b.WriteString("finsvc keeps retrying on its schedule; if every attempt fails for 5 days, the endpoint is disabled.\n")
	}
	fmt.Fprintf(&b, "\nThe endpoint's page: %s\n", link)
	return Message{To: to, Subject: "finsvc: " + subject, Body: b.String()}
}

func deref(s *string) string {
	if s == nil {
		return "no reason recorded"
	}
	return *s
}

// Start runs RunOnce every Interval until Stop.
func (n *Notices) Start(ctx context.Context) {
	n.loop = &janitor.Loop{Interval: Interval, FirstRun: Interval, Run: func(ctx context.Context) error {
		_, err := n.RunOnce(ctx)
		return err
	}}
	n.loop.Start(ctx)
}

// Stop ends the loop and waits for a run in progress.
func (n *Notices) Stop() {
	if n.loop != nil {
		n.loop.Stop()
	}
}
