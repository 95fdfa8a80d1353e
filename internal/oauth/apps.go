package oauth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/oauth/store"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/textinput"
)

// App limits.
const (
	maxAppName      = 200
	maxRedirectURIs = 10
	maxRedirectURI  = 2000
)

// App is a registered app as shown to its admins (never with its secret).
type App = store.Client

// newClientID returns "app_" + 16 random bytes in hex.
func newClientID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return "app_" + hex.EncodeToString(b[:])
}

// NewSecret returns a client secret: 32 random bytes, URL-safe base64.
func NewSecret() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ValidateApp checks an app's name, redirect URIs and scopes and returns
// them normalized (trimmed, deduplicated); scopes default to all scopes.
// Failures are apperr.Invalid with field messages.
func ValidateApp(name string, redirectURIs, scopes []string) (string, []string, []string, error) {
	fe := apperr.FieldErrors{}
	name = strings.TrimSpace(name)
	switch {
	case !textinput.Valid(name):
		fe.Add("name", textinput.Message)
	case name == "":
		fe.Add("name", "is required")
	case utf8.RuneCountInString(name) > maxAppName:
		fe.Add("name", fmt.Sprintf("must be at most %d characters", maxAppName))
	}
	var uris []string
	for _, u := range redirectURIs {
		u = strings.TrimSpace(u)
		if u == "" || slices.Contains(uris, u) {
			continue
		}
		if !textinput.Valid(u) {
			fe.Add("redirect_uris", fmt.Sprintf("%q %s", u, textinput.Message))
			continue
		}
		if msg := checkRedirectURI(u); msg != "" {
			fe.Add("redirect_uris", fmt.Sprintf("%q %s", u, msg))
			continue
		}
		uris = append(uris, u)
	}
	if len(uris) == 0 && fe["redirect_uris"] == nil {
		fe.Add("redirect_uris", "at least one redirect URI is required")
	}
	if len(uris) > maxRedirectURIs {
		fe.Add("redirect_uris", fmt.Sprintf("at most %d redirect URIs", maxRedirectURIs))
	}
	var scs []string
	for _, sc := range scopes {
		for _, f := range strings.Fields(sc) {
			if !slices.Contains(auth.AllScopes, f) {
				fe.Add("scopes", fmt.Sprintf("unknown scope %q", f))
				continue
			}
			if !slices.Contains(scs, f) {
				scs = append(scs, f)
			}
		}
	}
	if len(scs) == 0 && fe["scopes"] == nil {
		scs = slices.Clone(auth.AllScopes)
	}
	if err := fe.Err(apperr.Invalid, "invalid app"); err != nil {
		return "", nil, nil, err
	}
	return name, uris, scs, nil
}

// checkRedirectURI returns why u cannot be a redirect URI, or "". HTTPS is
// required except for loopback addresses (native apps, RFC 8252).
func checkRedirectURI(u string) string {
	if len(u) > maxRedirectURI {
		return fmt.Sprintf("is longer than %d characters", maxRedirectURI)
	}
	p, err := url.Parse(u)
	if err != nil || !p.IsAbs() || p.Host == "" || p.Opaque != "" {
		return "is not an absolute URL"
	}
	if p.Fragment != "" || strings.Contains(u, "#") {
		return "must not contain a fragment"
	}
	if p.User != nil {
		return "must not contain credentials"
	}
	switch p.Scheme {
	case "https":
	case "http":
		h := p.Hostname()
		if ip := net.ParseIP(h); !(h == "localhost" || strings.HasSuffix(h, ".localhost") || ip != nil && ip.IsLoopback()) {
			return "must use https (http only for loopback addresses)"
		}
	default:
		return "must use https"
	}
	return ""
}

// CreateApp registers an app in tenant tenantID and returns its client id
// and secret. The secret is not stored (only its SHA-256), so this is the
// only time it is available. The CLI (`finsvc app create`) and demo
// seeding call it; the developer page goes through CreateAppCtx.
func CreateApp(ctx context.Context, d *db.DB, tenantID int64, name string, redirectURIs, scopes []string) (clientID, secret string, err error) {
	return CreateAppCtx(tenant.NewContext(ctx, &tenant.Tenant{ID: tenantID}), d, nil, name, redirectURIs, scopes)
}

// CreateAppCtx is CreateApp for the tenant in ctx; createdBy is the admin
// who registered it (nil from the CLI and seeding, which the audit log
// records as the service).
func CreateAppCtx(ctx context.Context, d *db.DB, createdBy *int64, name string, redirectURIs, scopes []string) (clientID, secret string, err error) {
	name, uris, scs, err := ValidateApp(name, redirectURIs, scopes)
	if err != nil {
		return "", "", err
	}
	uj, err := json.Marshal(uris)
	if err != nil {
		return "", "", fmt.Errorf("oauth: encode redirect URIs: %w", err)
	}
	secret = NewSecret()
	c := &store.Client{
		TenantID: tenant.ID(ctx), ID: newClientID(), Name: name, SecretHash: store.HashSecret(secret),
		RedirectURIs: string(uj), Scopes: strings.Join(scs, " "), CreatedBy: createdBy,
	}
	actor := audit.SystemActor
	if createdBy != nil {
		actor = audit.UserActor(*createdBy)
	}
	err = d.Tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(c).Error; err != nil {
			if db.IsForeignKeyViolation(err) {
				return apperr.E(apperr.NotFound, "tenant not found")
			}
			return fmt.Errorf("oauth: create app: %w", err)
		}
		return recordApp(ctx, tx, actor, audit.AppCreated, c.ID)
	})
	if err != nil {
		return "", "", err
	}
	return c.ID, secret, nil
}

// ListApps returns the apps of the tenant in ctx, by name.
func ListApps(ctx context.Context, d *db.DB) ([]App, error) {
	var apps []App
	if err := tenant.Scope(ctx, d.DB).Order("name, id").Find(&apps).Error; err != nil {
		return nil, fmt.Errorf("oauth: list apps: %w", err)
	}
	return apps, nil
}

// Secret rotation windows: how long the replaced secret keeps working
// after a rotation (0: it stops at once, for a leaked secret).
const (
	DefaultSecretOverlap = 24 * time.Hour
	MaxSecretOverlap     = 30 * 24 * time.Hour
)

// RotateSecret gives the app a new secret and returns it (shown once). The
// secret it replaces keeps working for overlap, so that running
// integrations can switch without an outage, and previousUntil says until
// when (nil when overlap is 0: it stops at once). Only one previous secret
// is kept: a second rotation within the window ends the first one's.
// Issued tokens stay valid either way. actor is who rotated it (the
// audit log's record).
func RotateSecret(ctx context.Context, d *db.DB, actor *audit.Actor, clientID string, overlap time.Duration) (secret string, previousUntil *time.Time, err error) {
	if overlap < 0 || overlap > MaxSecretOverlap {
		return "", nil, apperr.E(apperr.Invalid, "invalid rotation").
			WithField("overlap", fmt.Sprintf("must be between 0 (now) and %s", formatOverlap(MaxSecretOverlap)))
	}
	now := d.NowFunc()
	secret = NewSecret()
	set := map[string]any{
		"secret_hash": store.HashSecret(secret), "updated_at": now,
		"previous_secret_hash": "", "previous_secret_expires_at": nil,
	}
	if overlap > 0 {
		until := now.Add(overlap)
		previousUntil = &until
		// SET reads the row as it was: the current secret becomes the
		// previous one.
		set["previous_secret_hash"], set["previous_secret_expires_at"] = gorm.Expr("secret_hash"), until
	}
	err = d.Tx(ctx, func(tx *gorm.DB) error {
		res := tenant.Scope(ctx, tx).Model(&store.Client{}).Where("id = ?", clientID).Updates(set)
		if res.Error != nil {
			return fmt.Errorf("oauth: rotate secret: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return apperr.E(apperr.NotFound, "app not found")
		}
		return recordApp(ctx, tx, actor, audit.AppSecretRotated, clientID)
	})
	if err != nil {
		return "", nil, err
	}
	return secret, previousUntil, nil
}

// EndSecretOverlap makes the app's previous secret stop working now (a
// rotation's window ended early, when the old secret may have leaked or
// every integration has switched). Without one it changes nothing, and
// the audit log records actor's action only when a previous secret still
// worked.
func EndSecretOverlap(ctx context.Context, d *db.DB, actor *audit.Actor, clientID string) error {
	return d.Tx(ctx, func(tx *gorm.DB) error {
		var app store.Client
		err := d.ForUpdate(tenant.Scope(ctx, tx)).Where("id = ?", clientID).Take(&app).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return apperr.E(apperr.NotFound, "app not found")
		}
		if err != nil {
			return fmt.Errorf("oauth: end secret overlap: %w", err)
		}
		now := d.NowFunc()
		err = tenant.Scope(ctx, tx).Model(&store.Client{}).Where("id = ?", clientID).
			Updates(map[string]any{"previous_secret_hash": "", "previous_secret_expires_at": nil, "updated_at": now}).Error
		if err != nil {
			return fmt.Errorf("oauth: end secret overlap: %w", err)
		}
		if app.PreviousSecretUntil(now) == nil {
			return nil
		}
		return recordApp(ctx, tx, actor, audit.AppSecretOverlapEnded, clientID)
	})
}

// ParseOverlap reads a rotation window as the forms and the CLI give it:
// "now" or "0" for none, else a Go duration ("24h", "90m").
func ParseOverlap(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DefaultSecretOverlap, nil
	}
	if s == "now" || s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > MaxSecretOverlap {
		return 0, apperr.E(apperr.Invalid, "invalid rotation").
			WithField("overlap", fmt.Sprintf("must be \"now\" or a duration up to %s, such as 24h", formatOverlap(MaxSecretOverlap)))
	}
	return d, nil
}

func formatOverlap(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd (%s)", d/(24*time.Hour), d)
	}
	return d.String()
}

// DeleteApp deletes the app; its codes, tokens and consents go with it
// (foreign keys cascade). actor is who deleted it (the audit log's record).
func DeleteApp(ctx context.Context, d *db.DB, actor *audit.Actor, clientID string) error {
	return d.Tx(ctx, func(tx *gorm.DB) error {
		res := tenant.Scope(ctx, tx).Where("id = ?", clientID).Delete(&store.Client{})
		if res.Error != nil {
			return fmt.Errorf("oauth: delete app: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return apperr.E(apperr.NotFound, "app not found")
		}
		return recordApp(ctx, tx, actor, audit.AppDeleted, clientID)
	})
}

// recordApp writes the audit record of actor's action on app clientID, in
// the action's transaction tx.
func recordApp(ctx context.Context, tx *gorm.DB, actor *audit.Actor, action, clientID string) error {
	return audit.Record(ctx, tx, audit.Entry{Action: action, TargetType: audit.TargetApp, TargetID: clientID, Actor: actor})
}

// EnsureApp makes sure the tenant in ctx has an app named name with these
// redirect URIs and scopes, and returns its client id and a fresh secret:
// an existing app of that name keeps its id and gets a new secret (the old
// one is not recoverable; the audit log records a rotation by the
// service). For idempotent seeding (`finsvc demo --data DIR` run twice).
func EnsureApp(ctx context.Context, d *db.DB, name string, redirectURIs, scopes []string) (clientID, secret string, err error) {
	name, uris, scs, err := ValidateApp(name, redirectURIs, scopes)
	if err != nil {
		return "", "", err
	}
	var existing store.Client
	res := tenant.Scope(ctx, d.DB).Where("name = ?", name).Order("created_at").Limit(1).Find(&existing)
	if res.Error != nil {
		return "", "", fmt.Errorf("oauth: find app: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return CreateAppCtx(ctx, d, nil, name, uris, scs)
	}
	uj, err := json.Marshal(uris)
	if err != nil {
		return "", "", fmt.Errorf("oauth: encode redirect URIs: %w", err)
	}
	secret = NewSecret()
	err = d.Tx(ctx, func(tx *gorm.DB) error {
		err := tenant.Scope(ctx, tx).Model(&store.Client{}).Where("id = ?", existing.ID).Updates(map[string]any{
			"secret_hash": store.HashSecret(secret), "redirect_uris": string(uj), "scopes": strings.Join(scs, " "), "updated_at": d.NowFunc(),
			"previous_secret_hash": "", "previous_secret_expires_at": nil,
		}).Error
		if err != nil {
			return fmt.Errorf("oauth: update app: %w", err)
		}
		return recordApp(ctx, tx, audit.SystemActor, audit.AppSecretRotated, existing.ID)
	})
	if err != nil {
		return "", "", err
	}
	return existing.ID, secret, nil
}
