// Package config is the service's single configuration: every setting,
// its FINSVC_* environment variable, its flag and its default live in one
// table (settings), from which LoadEnv, RegisterFlags and the --help listing
// are all derived, so they cannot drift apart.
//
// Precedence: defaults < environment < flags. Typical use:
//
//	cfg := config.Default()
//	if err := cfg.LoadEnv(); err != nil { … }
//	cfg.RegisterFlags(fs)
//	fs.Parse(args)
//	if err := cfg.Validate(); err != nil { … }
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"
)

// Config holds every setting of the service.
type Config struct {
	Addr        string // listen address, host:port
	DataDir     string // SQLite file, generated secret, demo.json
	DatabaseURL string // empty: SQLite file <DataDir>/finsvc.db
	// DatabaseDirectURL reaches PostgreSQL without a transaction pooler,
	// for what needs a session: LISTEN/NOTIFY and the migration lock.
	// Empty: DatabaseURL.
	DatabaseDirectURL string
	// DatabasePooler says what stands between DatabaseURL and PostgreSQL:
	// "transaction" (PgBouncer in transaction mode: no prepared statements
	// kept), "none" (pgx's statement cache), or "auto": transaction when
	// DatabaseDirectURL is set (that is what setting it means), else none.
	DatabasePooler string
	BaseDomain     string // tenants are <slug>.<BaseDomain>
	TrustProxy     bool   // honour X-Forwarded-Host / -Proto / -For

	// Secret is the current global secret from which per-tenant token HMAC
	// keys and the sealing keys are derived. Env only (a flag would show in
	// ps). See ResolveSecret.
	Secret string
	// SecretPrevious and SecretRevoked complete the key ring (Ring,
	// internal/keyring): previous secrets, which only verify and open, and
	// the ids of those that leaked. Env only.
	SecretPrevious string
	SecretRevoked  string

	// SMTPURL is the mail server of the webhook failure notices
	// (smtp://[user:password@]host[:port][?from=address], or smtps://);
	// empty: no email is sent. Env only (it may hold a password).
	SMTPURL string

	AccessTokenTTL  time.Duration
	RefreshTokenTTL time.Duration
	AuthCodeTTL     time.Duration
	FetchWindow     time.Duration // fetch request lifetime (expires_at)
	// EventRetention: finished deliveries, their events and expired fetch
	// requests older than this are purged (at least MinEventRetention).
	EventRetention time.Duration
	// AuditRetention: audit records older than this are purged (at least
	// MinAuditRetention).
	AuditRetention time.Duration

	WebhookAllowPrivate bool          // lift the SSRF guard (tests, demo)
	WebhookTimeout      time.Duration // per delivery attempt
	// WebhookConcurrency is how many attempts one replica's worker makes at
	// once; WebhookEndpointConcurrency caps the attempts in flight for one
	// registration across all replicas, so that a slow or dead endpoint
	// holds at most that many workers.
	WebhookConcurrency         int
	WebhookEndpointConcurrency int

	RedisURL string // empty: in-process rate limiting

	// WebhookLease is how long a worker holds a delivery it claimed; a
	// crashed replica's deliveries are retried by the others after it.
	// Zero: the attempt timeout plus 45 s. It must exceed WebhookTimeout.
	WebhookLease time.Duration

	TLSCert string
	TLSKey  string

	RateLimitRPS   float64 // per tenant; 0 disables rate limiting
	RateLimitBurst int
	// Per client address, for requests without an authenticated caller
	// (failed authentications, the authorization pages); 0 disables.
	RateLimitAddressRPS   float64
	RateLimitAddressBurst int

	LogFormat string // "json" or "text"
	LogLevel  slog.Level

	NoMigrate     bool          // serve without applying migrations
	ShutdownGrace time.Duration // time to drain on SIGTERM
	BodyLimit     int64         // max request body, bytes
}

// BehindPooler reports whether DatabaseURL goes through a transaction
// pooler (DatabasePooler).
func (c *Config) BehindPooler() bool {
	switch c.DatabasePooler {
	case "transaction":
		return true
	case "none":
		return false
	}
	return c.DatabaseDirectURL != "" && c.DatabaseDirectURL != c.DatabaseURL
}

// SessionDatabaseURL is the URL for what needs a database session of its
// own (LISTEN/NOTIFY, advisory locks): DatabaseDirectURL when set, else
// DatabaseURL.
func (c *Config) SessionDatabaseURL() string {
	if c.DatabaseDirectURL != "" {
		return c.DatabaseDirectURL
	}
	return c.DatabaseURL
}

// MinEventRetention is the shortest FINSVC_EVENT_RETENTION accepted: a
// delivery log and a redelivery need at least that much history.
const MinEventRetention = time.Hour

// MinAuditRetention is the shortest FINSVC_AUDIT_RETENTION accepted; the
// audit log's trigger (migration 00160) refuses to delete younger records
// whatever the setting, and audit.MinRetention is the same.
const MinAuditRetention = 90 * 24 * time.Hour

// Default returns the built-in defaults (development friendly: text logs,
// SQLite in ./data).
func Default() *Config {
	return &Config{
		Addr:            ":8080",
		DataDir:         "./data",
		DatabasePooler:  "auto",
		BaseDomain:      "localhost",
		AccessTokenTTL:  time.Hour,
		RefreshTokenTTL: 720 * time.Hour,
		AuthCodeTTL:     10 * time.Minute,
		FetchWindow:     30 * time.Minute,
		EventRetention:  720 * time.Hour,
		AuditRetention:  365 * 24 * time.Hour,
		WebhookTimeout:  15 * time.Second,
		// 32 workers with 2 per endpoint: up to 15 dead endpoints leave
		// room for the healthy ones before their circuits open.
		WebhookConcurrency:         32,
		WebhookEndpointConcurrency: 2,
		RateLimitRPS:               50,
		RateLimitBurst:             100,

		RateLimitAddressRPS:   2,
		RateLimitAddressBurst: 40,
		LogFormat:             "text",
		LogLevel:              slog.LevelInfo,
		ShutdownGrace:         15 * time.Second,
		BodyLimit:             1 << 20,
	}
}

// LoadEnv applies the FINSVC_* environment variables that are set. A bad
// value is an error naming the variable.
func (c *Config) LoadEnv() error { return c.LoadEnvFrom(os.LookupEnv) }

// LoadEnvFrom is LoadEnv with an injectable lookup (tests, embedding).
func (c *Config) LoadEnvFrom(lookup func(string) (string, bool)) error {
	var errs []error
	for _, s := range c.settings() {
		v, ok := lookup(s.Env)
		if !ok {
			continue
		}
		if err := s.Value.Set(v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Env, err))
		}
	}
	return errors.Join(errs...)
}

// Validate checks values that parse but make no sense together.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Addr == "" {
		add("addr: must not be empty")
	}
	if c.DataDir == "" && c.DatabaseURL == "" {
		add("data: must not be empty when no database URL is set")
	}
	if err := validateBaseDomain(c.BaseDomain); err != nil {
		add("base-domain: %v", err)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"access-token-ttl", c.AccessTokenTTL},
		{"refresh-token-ttl", c.RefreshTokenTTL},
		{"auth-code-ttl", c.AuthCodeTTL},
		{"fetch-window", c.FetchWindow},
		{"webhook-timeout", c.WebhookTimeout},
	} {
		if d.v <= 0 {
			add("%s: must be positive, got %s", d.name, d.v)
		}
	}
	if c.WebhookLease != 0 && c.WebhookLease <= c.WebhookTimeout {
		add("webhook-lease (FINSVC_WEBHOOK_LEASE): must exceed webhook-timeout (%s), got %s", c.WebhookTimeout, c.WebhookLease)
	}
	if c.WebhookConcurrency < 1 {
		add("webhook-concurrency (FINSVC_WEBHOOK_CONCURRENCY): must be at least 1, got %d", c.WebhookConcurrency)
	}
	if c.WebhookEndpointConcurrency < 1 {
		add("webhook-endpoint-concurrency (FINSVC_WEBHOOK_ENDPOINT_CONCURRENCY): must be at least 1, got %d", c.WebhookEndpointConcurrency)
	}
	if c.AuditRetention < MinAuditRetention {
		add("audit-retention (FINSVC_AUDIT_RETENTION): must be at least %s, got %s", MinAuditRetention, c.AuditRetention)
	}
	if c.EventRetention < MinEventRetention {
		add("event-retention (FINSVC_EVENT_RETENTION): must be at least %s, got %s", MinEventRetention, c.EventRetention)
	}
	if c.ShutdownGrace < 0 {
		add("shutdown-grace: must not be negative")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		add("tls-cert and tls-key: set both or neither")
	}
	if c.RateLimitRPS < 0 {
		add("rate-limit-rps: must not be negative")
	}
	if c.RateLimitRPS > 0 && c.RateLimitBurst < 1 {
		add("rate-limit-burst: must be at least 1 when rate limiting is on")
	}
	if c.RateLimitAddressRPS < 0 {
		add("rate-limit-address-rps: must not be negative")
	}
	if c.RateLimitAddressRPS > 0 && c.RateLimitAddressBurst < 1 {
		add("rate-limit-address-burst: must be at least 1 when address limiting is on")
	}
	if c.BodyLimit <= 0 {
		add("body-limit: must be positive")
	}
	if c.RedisURL != "" {
		if u, err := url.Parse(c.RedisURL); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
			add("redis-url: want redis://host:port/db or rediss://…")
		}
	}
	if c.Secret != "" || c.SecretPrevious != "" || c.SecretRevoked != "" {
		if _, err := c.Ring(); err != nil {
			add("%s", err.Error())
		}
	}
	return errors.Join(errs...)
}

func validateBaseDomain(d string) error {
	if d == "" {
		return errors.New("must not be empty")
	}
	if d != strings.ToLower(d) || strings.ContainsAny(d, ":/ ") || strings.HasPrefix(d, ".") || strings.HasSuffix(d, ".") {
		return fmt.Errorf("%q is not a lowercase host name without port", d)
	}
	return nil
}

// TLS reports whether serve terminates TLS itself.
func (c *Config) TLS() bool { return c.TLSCert != "" && c.TLSKey != "" }

// LogValue renders the configuration for a startup log line with secrets
// removed: the global secret is never shown and the database and Redis URLs
// lose their passwords.
func (c *Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("addr", c.Addr),
		slog.String("data", c.DataDir),
		slog.String("database_url", redactURL(c.DatabaseURL)),
		slog.String("database_direct_url", redactURL(c.DatabaseDirectURL)),
		slog.String("base_domain", c.BaseDomain),
		slog.Bool("trust_proxy", c.TrustProxy),
		slog.Bool("secret_set", c.Secret != ""),
		slog.String("key_ring", c.ringIDs()),
		slog.Duration("access_token_ttl", c.AccessTokenTTL),
		slog.Duration("refresh_token_ttl", c.RefreshTokenTTL),
		slog.Duration("auth_code_ttl", c.AuthCodeTTL),
		slog.Duration("fetch_window", c.FetchWindow),
		slog.Duration("event_retention", c.EventRetention),
		slog.Duration("audit_retention", c.AuditRetention),
		slog.Bool("webhook_allow_private", c.WebhookAllowPrivate),
		slog.Duration("webhook_timeout", c.WebhookTimeout),
		slog.Duration("webhook_lease", c.WebhookLease),
		slog.Int("webhook_concurrency", c.WebhookConcurrency),
		slog.Int("webhook_endpoint_concurrency", c.WebhookEndpointConcurrency),
		slog.String("redis_url", redactURL(c.RedisURL)),
		slog.Bool("tls", c.TLS()),
		slog.Float64("rate_limit_rps", c.RateLimitRPS),
		slog.Int("rate_limit_burst", c.RateLimitBurst),
		slog.Float64("rate_limit_address_rps", c.RateLimitAddressRPS),
		slog.Int("rate_limit_address_burst", c.RateLimitAddressBurst),
		slog.String("log_format", c.LogFormat),
		slog.String("log_level", c.LogLevel.String()),
		slog.Bool("no_migrate", c.NoMigrate),
		slog.Duration("shutdown_grace", c.ShutdownGrace),
		slog.Int64("body_limit", c.BodyLimit),
	)
}

// redactURL hides the password of a URL-style DSN. Anything that does not
// parse as a URL with a scheme (a key=value DSN may hold password=…) is
// hidden entirely.
func redactURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Opaque != "" && strings.Contains(s, "=") {
		return "(set)"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
