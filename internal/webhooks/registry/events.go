package registry

import (
	"context"
	"maps"
	"slices"

	"github.com/google/uuid"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

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
