// Package oauth is finsvc's OAuth 2.0 authorization server (ARCHITECTURE.md,
// OAuth): fosite composed with only the authorization-code, refresh-token,
// PKCE (S256), revocation and introspection handlers over the GORM storage
// in oauth/store; the /oauth/authorize, /api/oauth/token and
// /api/oauth/revoke endpoints; the login, consent, developer and account
// pages; and the bearer check of /api/1.0 (AuthenticateBearer).
package oauth

import (
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"
	foauth2 "github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/token/hmac"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/keyring"
	"github.com/finsvc/finsvc/internal/mfa"
	"github.com/finsvc/finsvc/internal/oauth/store"
	"github.com/finsvc/finsvc/internal/users"
	"github.com/finsvc/finsvc/internal/web"
)

// MinStateLen is the minimum length of the state parameter.
const MinStateLen = 8

// SessionTTL is how long a browser login lasts.
const SessionTTL = 12 * time.Hour

// Service is the authorization server of all tenants. Everything it does
// is scoped to the tenant in the request context.
type Service struct {
	db       *db.DB
	hotDB    *gorm.DB // prepared-statement session for the bearer check
	cfg      *config.Config
	log      *slog.Logger
	store    *store.Store
	users    *users.Store
	provider fosite.OAuth2Provider
	fosite   *fosite.Fosite // the same provider: AuthenticateClient
	strategy *foauth2.HMACSHAStrategy
	enigma   *hmac.HMACStrategy
	ring     *keyring.Ring // token, CSRF and flash keys derive from it
	pages    *template.Template
	now      func() time.Time
	logins   *loginThrottle
	budget   Budget
	policy   *auth.Policy
	nav      web.Nav
	mfa      *mfa.Store // nil: no second factor is asked (factor.go)
}

// Budget charges the token endpoints and the authorization pages to the rate
// limits (internal/ratelimit's Limiter): a client that authenticates spends its
// tenant's budget, anything else the client address's.
type Budget interface {
	GuardAddress(c echo.Context, budget string) error
	ChargeAddress(c echo.Context, budget string) error
	ChargeTenant(c echo.Context, budget string) error
}

type noBudget struct{}

func (noBudget) GuardAddress(echo.Context, string) error  { return nil }
func (noBudget) ChargeAddress(echo.Context, string) error { return nil }
func (noBudget) ChargeTenant(echo.Context, string) error  { return nil }

// Option adjusts New.
type Option func(*Service)

// WithBudget charges requests to b (default: nothing is limited).
func WithBudget(b Budget) Option { return func(s *Service) { s.budget = b } }

// WithPolicy is the operation policy the developer pages ask (required:
// New fails without it, or when it has no rule for the pages).
func WithPolicy(p *auth.Policy) Option { return func(s *Service) { s.policy = p } }

// WithNav is the whole navigation the pages show (internal/app joins the
// console's and Nav); default: Nav alone.
func WithNav(n web.Nav) Option { return func(s *Service) { s.nav = n } }

// Nav is these pages' part of the navigation.
var Nav = web.Nav{
	{Key: "developer", Label: "Developer apps", Path: "/developer/my-apps", Op: auth.PageManageApps},
	{Key: "account", Label: "Authorized apps", Path: "/account/apps"},
	{Key: "password", Label: "Password", Path: web.PasswordPath},
}

// opConsoleWork is the operation whose rule decides where sign-in lands:
// whoever may change a webhook has work in the console.
var opConsoleWork = auth.OpUpdateWebhook

// New builds the service. cfg.Secret must be set (config.ResolveSecret):
// every tenant's token and CSRF keys derive from it. us is the user store
// the sign-in pages authenticate against (the composition root's, so that
// one password-hashing policy applies everywhere).
func New(d *db.DB, cfg *config.Config, log *slog.Logger, us *users.Store, opts ...Option) (*Service, error) {
	if d == nil || cfg == nil || us == nil {
		return nil, errors.New("oauth: database, config and user store are required")
	}
	ring, err := cfg.Ring()
	if err != nil {
		return nil, fmt.Errorf("oauth: the key ring (config.ResolveSecret): %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	st := store.New(d)
	fc := &fosite.Config{
		AccessTokenLifespan:   cfg.AccessTokenTTL,
		RefreshTokenLifespan:  cfg.RefreshTokenTTL,
		AuthorizeCodeLifespan: cfg.AuthCodeTTL,
		// Refresh tokens are issued regardless of scope (ARCHITECTURE.md, Authorization);
		// nil would mean "only with offline_access".
		RefreshTokenScopes:             []string{},
		MinParameterEntropy:            MinStateLen,
		ScopeStrategy:                  fosite.ExactScopeStrategy,
		EnablePKCEPlainChallengeMethod: false, // S256 only
		ClientSecretsHasher:            store.SecretHasher{},
		SendDebugMessagesToClients:     false,
	}
	keys := &tenantKeys{Config: fc, ring: ring}
	enigma := &hmac.HMACStrategy{Config: keys}
	strategy := foauth2.NewHMACSHAStrategy(enigma, keys)
	provider := compose.Compose(fc, st, strategy,
		compose.OAuth2AuthorizeExplicitFactory,
		compose.OAuth2RefreshTokenGrantFactory,
		compose.OAuth2PKCEFactory,
		compose.OAuth2TokenRevocationFactory,
		compose.OAuth2TokenIntrospectionFactory,
	)
	if _, err := scopeDescriptions(); err != nil {
		return nil, err
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	svc := &Service{
		db: d, hotDB: d.PreparedSession(), cfg: cfg, log: log, store: st, users: us,
		provider: provider, fosite: provider.(*fosite.Fosite), strategy: strategy, enigma: enigma,
		ring: ring, pages: pages, now: time.Now, budget: noBudget{}, nav: Nav,
	}
	for _, o := range opts {
		o(svc)
	}
	if svc.policy == nil {
		return nil, errors.New("oauth: the operation policy is required (WithPolicy)")
	}
	svc.logins = newLoginThrottle(func() time.Time { return svc.now() })
	st.SetClock(func() time.Time { return svc.now() })
	return svc, nil
}

// Store returns the fosite storage (tests, maintenance).
func (s *Service) Store() *store.Store { return s.store }
