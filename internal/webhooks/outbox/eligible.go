package outbox

import "strings"

// Policy says which registrations are eligible. AllowHTTP admits http://
// targets (FINSVC_WEBHOOK_ALLOW_PRIVATE, tests and demo); otherwise only
// https:// targets are.
type Policy struct {
	AllowHTTP bool
}

// condition is one part of eligibility: a predicate over the webhooks table
// and the reason a delivery is cancelled when it no longer holds.
type condition struct{ sql, reason string }

// conditions is the eligibility rule, written once: a registration receives
// an event when it is active, its target is https:// (or http:// when
// allowed), and the user who created it still exists in the tenant and is
// not deactivated (every
// user of a tenant may read its acts, so an existing user is one with access
// to the act). Emit applies it when an event is written; delivery workers
// apply it again before every attempt (IneligibleSQL), because any of it may
// change in between.
//
// The scheme is compared with substr, not LIKE: LIKE ignores case on SQLite,
// and the rule must read the same on both dialects.
func (p Policy) conditions() []condition {
	target := "substr(webhooks.target, 1, 8) = 'https://'"
	if p.AllowHTTP {
		target = "(" + target + " OR substr(webhooks.target, 1, 7) = 'http://')"
	}
	return []condition{
		{"webhooks.active", "registration is inactive"},
		{"EXISTS (SELECT 1 FROM users u WHERE u.tenant_id = webhooks.tenant_id AND u.id = webhooks.created_by_user_id AND u.deactivated_at IS NULL)",
			"the registering user no longer has access"},
		{target, "target is not https"},
	}
}

// eligibleSQL is the rule as a WHERE condition on the webhooks table.
func (p Policy) eligibleSQL() string {
	cs := p.conditions()
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.sql
	}
	return strings.Join(parts, " AND ")
}

// IneligibleSQL is the rule as a column over the webhooks table (which must
// be named webhooks in the query): the reason of the first condition that
// fails, or an empty string when the registration is eligible.
func (p Policy) IneligibleSQL() string {
	var b strings.Builder
	b.WriteString("CASE")
	for _, c := range p.conditions() {
		// The reasons are constants above, without quotes.
		b.WriteString(" WHEN NOT (" + c.sql + ") THEN '" + c.reason + "'")
	}
	b.WriteString(" ELSE '' END")
	return b.String()
}
