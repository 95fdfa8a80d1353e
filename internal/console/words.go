package console

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/ory/fosite"

	"github.com/finsvc/finsvc/internal/acts"
	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/oauth/store"
	"github.com/finsvc/finsvc/internal/templates"
	"github.com/finsvc/finsvc/internal/web"
)

// The words people read for the codes the API sends (the HistoryKind and
// FieldSource enums of the spec). A code without words here is shown as
// words made from it, so a new kind never shows as a raw code.
var (
	historyWords = map[acts.HistoryKind]string{
		acts.KindActCreated:     "Act created",
		acts.KindActDuplicated:  "Act duplicated",
		acts.KindActUpdated:     "Title changed",
		acts.KindActFinalized:   "Act finalized",
		acts.KindFetchRequested: "Fetch requested",
		acts.KindValueAccepted:  "Value accepted",
		acts.KindFetchFailed:    "Fetch failed",
		acts.KindValueEdited:    "Value edited",
	}
	sourceWords = map[templates.Source]string{
		templates.SourceExternalData:      "External data",
		templates.SourceManual:            "Entered by hand",
		templates.SourceClientCompanyName: "Client's company name",
		templates.SourceClientOrgNumber:   "Client's organisation number",
		templates.SourceClientCountry:     "Client's country",
		templates.SourceClientCreditLimit: "Client's credit limit",
		templates.SourceActCreatedAt:      "Act's creation time",
	}
)

// words makes a phrase of a code: "value_accepted" → "Value accepted"
// (web.Label's rule, with dots as spaces too).
func words(code string) string {
	return web.Label(strings.TrimSpace(strings.NewReplacer("_", " ", ".", " ").Replace(code)))
}

func kindWords(k acts.HistoryKind) string {
	if w, ok := historyWords[k]; ok {
		return w
	}
	return words(string(k))
}

func sourceWordsOf(s templates.Source) string {
	if w, ok := sourceWords[s]; ok {
		return w
	}
	return words(string(s))
}

// Apps names the OAuth apps that acted (internal/oauth/store).
type Apps interface {
	Client(ctx context.Context, id string) (*store.Client, error)
}

// actorNames names who made each change of a history: a person by name and
// email, an app by its name (with the person it acted for), the service as
// itself. Each user and app is read once per page; one deleted since is
// named as such, never by its id.
type actorNames struct {
	cs    *Console
	users map[int64]string
	apps  map[string]string
}

func (cs *Console) actorNames() *actorNames {
	return &actorNames{cs: cs, users: map[int64]string{}, apps: map[string]string{}}
}

func (n *actorNames) user(ctx context.Context, id int64) (string, error) {
	if s, ok := n.users[id]; ok {
		return s, nil
	}
	u, err := n.cs.d.Users.Get(ctx, id)
	s := ""
	switch {
	case apperr.Is(err, apperr.NotFound):
		s = "a removed user"
	case err != nil:
		return "", err
	case u.Name != "":
		s = u.Name + " (" + u.Email + ")"
	default:
		s = u.Email
	}
	n.users[id] = s
	return s, nil
}

func (n *actorNames) app(ctx context.Context, id string) (string, error) {
	if s, ok := n.apps[id]; ok {
		return s, nil
	}
	s := "a deleted app"
	if n.cs.d.Apps != nil {
		c, err := n.cs.d.Apps.Client(ctx, id)
		switch {
		case errors.Is(err, fosite.ErrNotFound):
		case err != nil:
			return "", err
		default:
			s = "the app " + strconv.Quote(c.Name)
		}
	}
	n.apps[id] = s
	return s, nil
}

// of names the actor of e.
func (n *actorNames) of(ctx context.Context, e *acts.HistoryEntry) (string, error) {
	switch e.ActorType {
	case acts.ActorUser:
		if e.ActorUserID != nil {
			return n.user(ctx, *e.ActorUserID)
		}
	case acts.ActorApp:
		app, err := n.app(ctx, e.ActorID)
		if err != nil || e.ActorUserID == nil {
			return app, err
		}
		who, err := n.user(ctx, *e.ActorUserID)
		return words(app) + " for " + who, err
	case acts.ActorSystem:
		return "finsvc (filled in by the service)", nil
	}
	return words(string(e.ActorType)), nil
}
