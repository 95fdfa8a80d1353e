package config

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// setting binds one Config field to its flag and environment variable.
type setting struct {
	Flag  string // empty: environment only (secrets)
	Env   string
	Usage string
	Value flag.Value // writes through to the Config field
}

// settings is the single table of settings, bound to c's fields.
func (c *Config) settings() []setting {
	return []setting{
		{"addr", "FINSVC_ADDR", "listen address (host:port; port 0 picks a free one)", (*stringValue)(&c.Addr)},
		{"data", "FINSVC_DATA_DIR", "data directory: SQLite database, generated secret, demo.json", (*stringValue)(&c.DataDir)},
		{"database-url", "FINSVC_DATABASE_URL", "postgres://… URL; empty uses SQLite <data>/finsvc.db", (*stringValue)(&c.DatabaseURL)},
		{"database-direct-url", "FINSVC_DATABASE_DIRECT_URL", "postgres://… URL that bypasses a transaction pooler (PgBouncer), for LISTEN/NOTIFY and the migration lock; empty uses database-url", (*stringValue)(&c.DatabaseDirectURL)},
		{"database-pooler", "FINSVC_DATABASE_POOLER", "what is in front of database-url: transaction (PgBouncer in transaction mode: no prepared statements kept), none (pgx's statement cache), auto (transaction when database-direct-url is set)", &enumValue{p: &c.DatabasePooler, allowed: []string{"auto", "none", "transaction"}}},
		{"base-domain", "FINSVC_BASE_DOMAIN", "tenants are served at <slug>.<base-domain>", (*stringValue)(&c.BaseDomain)},
		{"trust-proxy", "FINSVC_TRUST_PROXY", "honour X-Forwarded-Host/-Proto/-For from a reverse proxy", (*boolValue)(&c.TrustProxy)},
		{"", "FINSVC_SECRET", "current global secret: token HMAC keys, sealing key (>= 32 chars); generated into <data>/secret on SQLite, required on PostgreSQL", (*stringValue)(&c.Secret)},
		{"", "FINSVC_SECRET_PREVIOUS", "previous global secrets, comma-separated: verify tokens and open sealed data only (key rotation)", (*stringValue)(&c.SecretPrevious)},
		{"", "FINSVC_SECRET_REVOKED", "key ids of previous secrets that leaked: their tokens are refused at once (see finsvc secret status)", (*stringValue)(&c.SecretRevoked)},
		{"", "FINSVC_SMTP_URL", "smtp://[user:password@]host[:port][?from=address] (or smtps://) for webhook failure notices to the tenants' admins; empty sends no email", (*stringValue)(&c.SMTPURL)},
		{"access-token-ttl", "FINSVC_ACCESS_TOKEN_TTL", "OAuth access token lifetime", (*durationValue)(&c.AccessTokenTTL)},
		{"refresh-token-ttl", "FINSVC_REFRESH_TOKEN_TTL", "OAuth refresh token lifetime", (*durationValue)(&c.RefreshTokenTTL)},
		{"auth-code-ttl", "FINSVC_AUTH_CODE_TTL", "OAuth authorization code lifetime", (*durationValue)(&c.AuthCodeTTL)},
		{"fetch-window", "FINSVC_FETCH_WINDOW", "fetch request processing window (expires_at - requested_at)", (*durationValue)(&c.FetchWindow)},
		{"event-retention", "FINSVC_EVENT_RETENTION", "finished webhook deliveries, their events and expired fetch requests older than this are purged (at least 1h)", (*durationValue)(&c.EventRetention)},
		{"audit-retention", "FINSVC_AUDIT_RETENTION", "audit records older than this are purged (at least 2160h, 90 days)", (*durationValue)(&c.AuditRetention)},
		{"webhook-allow-private", "FINSVC_WEBHOOK_ALLOW_PRIVATE", "allow webhook targets on loopback/private addresses (tests, demo only)", (*boolValue)(&c.WebhookAllowPrivate)},
		{"webhook-timeout", "FINSVC_WEBHOOK_TIMEOUT", "timeout of one webhook delivery attempt", (*durationValue)(&c.WebhookTimeout)},
		{"webhook-lease", "FINSVC_WEBHOOK_LEASE", "how long a worker holds a claimed delivery before another replica may retry it (0: webhook-timeout + 45s)", (*durationValue)(&c.WebhookLease)},
		{"webhook-concurrency", "FINSVC_WEBHOOK_CONCURRENCY", "webhook delivery attempts one replica makes at once", (*intValue)(&c.WebhookConcurrency)},
		{"webhook-endpoint-concurrency", "FINSVC_WEBHOOK_ENDPOINT_CONCURRENCY", "webhook delivery attempts in flight for one registration, across all replicas", (*intValue)(&c.WebhookEndpointConcurrency)},
		{"redis-url", "FINSVC_REDIS_URL", "redis://… for rate limits shared by replicas; empty is in-process", (*stringValue)(&c.RedisURL)},
		{"tls-cert", "FINSVC_TLS_CERT", "TLS certificate file (PEM); with tls-key, serve HTTPS (TLS >= 1.2)", (*stringValue)(&c.TLSCert)},
		{"tls-key", "FINSVC_TLS_KEY", "TLS private key file (PEM)", (*stringValue)(&c.TLSKey)},
		{"rate-limit-rps", "FINSVC_RATE_LIMIT_RPS", "per-tenant request rate (requests/second); 0 disables", (*floatValue)(&c.RateLimitRPS)},
		{"rate-limit-burst", "FINSVC_RATE_LIMIT_BURST", "per-tenant burst size", (*intValue)(&c.RateLimitBurst)},
		{"rate-limit-address-rps", "FINSVC_RATE_LIMIT_ADDRESS_RPS", "per-client-address rate (requests/second) of failed authentications and authorization pages; 0 disables", (*floatValue)(&c.RateLimitAddressRPS)},
		{"rate-limit-address-burst", "FINSVC_RATE_LIMIT_ADDRESS_BURST", "per-client-address burst size", (*intValue)(&c.RateLimitAddressBurst)},
		{"log-format", "FINSVC_LOG_FORMAT", "log format: json or text", &enumValue{p: &c.LogFormat, allowed: []string{"json", "text"}}},
		{"log-level", "FINSVC_LOG_LEVEL", "log level: debug, info, warn or error", (*levelValue)(&c.LogLevel)},
		{"no-migrate", "FINSVC_NO_MIGRATE", "do not apply database migrations at startup", (*boolValue)(&c.NoMigrate)},
		{"shutdown-grace", "FINSVC_SHUTDOWN_GRACE", "time to finish in-flight work on SIGINT/SIGTERM", (*durationValue)(&c.ShutdownGrace)},
		{"body-limit", "FINSVC_BODY_LIMIT", "maximum request body size (e.g. 512K, 1M)", (*sizeValue)(&c.BodyLimit)},
	}
}

// RegisterFlags registers a flag for every setting that has one, writing
// into c. Call it after LoadEnv so that flags override the environment.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	for _, s := range c.settings() {
		if s.Flag != "" {
			fs.Var(s.Value, s.Flag, s.Usage+" (env "+s.Env+")")
		}
	}
}

// RegisterFlagsOnly registers the named settings' flags only (subcommands
// that need a few settings, e.g. migrate needs data and database-url).
func (c *Config) RegisterFlagsOnly(fs *flag.FlagSet, names ...string) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	for _, s := range c.settings() {
		if s.Flag != "" && want[s.Flag] {
			fs.Var(s.Value, s.Flag, s.Usage+" (env "+s.Env+")")
		}
	}
}

// PrintSettings writes the table of all settings (flag, environment
// variable, default, description) for --help. Defaults come from Default(),
// never from the live config, so no secret is ever printed.
func PrintSettings(w io.Writer) {
	def := Default().settings()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  FLAG\tENV\tDEFAULT\tDESCRIPTION")
	for _, s := range def {
		f := "-"
		if s.Flag != "" {
			f = "--" + s.Flag
		}
		d := s.Value.String()
		switch {
		case s.Env == "FINSVC_SECRET":
			d = "(generated)"
		case d == "":
			d = `""`
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", f, s.Env, d, s.Usage)
	}
	tw.Flush()
}

// Settings describes one setting for documentation (README table).
type Settings struct{ Flag, Env, Default, Usage string }

// List returns every setting with its default, in display order.
func List() []Settings {
	var out []Settings
	for _, s := range Default().settings() {
		out = append(out, Settings{Flag: s.Flag, Env: s.Env, Default: s.Value.String(), Usage: s.Usage})
	}
	return out
}

// flag.Value implementations writing through to Config fields.

type stringValue string

func (v *stringValue) Set(s string) error { *v = stringValue(s); return nil }
func (v *stringValue) String() string     { return string(*v) }

type boolValue bool

func (v *boolValue) Set(s string) error {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("invalid boolean %q (want true or false)", s)
	}
	*v = boolValue(b)
	return nil
}
func (v *boolValue) String() string   { return strconv.FormatBool(bool(*v)) }
func (v *boolValue) IsBoolFlag() bool { return true } // allows --trust-proxy without =true

type durationValue time.Duration

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("invalid duration %q (e.g. 30s, 15m, 1h)", s)
	}
	*v = durationValue(d)
	return nil
}
func (v *durationValue) String() string {
	// "1h0m0s" reads worse than "1h" in --help.
	s := time.Duration(*v).String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

type intValue int

func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("invalid integer %q", s)
	}
	*v = intValue(n)
	return nil
}
func (v *intValue) String() string { return strconv.Itoa(int(*v)) }

type floatValue float64

func (v *floatValue) Set(s string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || f != f { // reject NaN
		return fmt.Errorf("invalid number %q", s)
	}
	*v = floatValue(f)
	return nil
}
func (v *floatValue) String() string { return strconv.FormatFloat(float64(*v), 'g', -1, 64) }

type enumValue struct {
	p       *string
	allowed []string
}

func (v *enumValue) Set(s string) error {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, a := range v.allowed {
		if s == a {
			*v.p = s
			return nil
		}
	}
	return fmt.Errorf("invalid value %q (want one of %s)", s, strings.Join(v.allowed, ", "))
}

func (v *enumValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

type levelValue slog.Level

func (v *levelValue) Set(s string) error {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.TrimSpace(s))); err != nil {
		return fmt.Errorf("invalid log level %q (want debug, info, warn or error)", s)
	}
	*v = levelValue(l)
	return nil
}
func (v *levelValue) String() string { return strings.ToLower(slog.Level(*v).String()) }

// sizeValue is a byte count written as a number with an optional binary
// unit: 1048576, 512K, 1M, 1MB, 1MiB, 2G.
type sizeValue int64

func (v *sizeValue) Set(s string) error {
	n, err := ParseSize(s)
	if err != nil {
		return err
	}
	*v = sizeValue(n)
	return nil
}
func (v *sizeValue) String() string { return FormatSize(int64(*v)) }

// ParseSize parses a byte count such as "1M" (units are powers of 1024).
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	bad := fmt.Errorf("invalid size %q (e.g. 512K, 1M)", s)
	t = strings.TrimSuffix(t, "B")
	if u := strings.TrimSuffix(t, "I"); u != t {
		if !strings.HasSuffix(u, "K") && !strings.HasSuffix(u, "M") && !strings.HasSuffix(u, "G") {
			return 0, bad
		}
		t = u
	}
	mult := int64(1)
	if t != "" {
		switch t[len(t)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		}
		if mult > 1 {
			t = t[:len(t)-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, bad
	}
	return n * mult, nil
}

// FormatSize renders n in the largest unit that divides it ("1M").
func FormatSize(n int64) string {
	for _, u := range []struct {
		s string
		m int64
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.m && n%u.m == 0 {
			return strconv.FormatInt(n/u.m, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
}
