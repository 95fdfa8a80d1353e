package config

import (
	"bytes"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDefaults(t *testing.T) {
	c := Default()
	if c.Addr != ":8080" || c.DataDir != "./data" || c.BaseDomain != "localhost" ||
		c.AccessTokenTTL != time.Hour || c.RefreshTokenTTL != 720*time.Hour ||
		c.AuthCodeTTL != 10*time.Minute || c.FetchWindow != 30*time.Minute ||
		c.WebhookTimeout != 15*time.Second || c.RateLimitRPS != 50 || c.RateLimitBurst != 100 ||
		c.LogFormat != "text" || c.LogLevel != slog.LevelInfo || c.ShutdownGrace != 15*time.Second ||
		c.BodyLimit != 1<<20 || c.TrustProxy || c.WebhookAllowPrivate || c.NoMigrate {
		t.Errorf("unexpected defaults: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
}

func TestLoadEnv(t *testing.T) {
	c := Default()
	err := c.LoadEnvFrom(env(map[string]string{
		"FINSVC_ADDR":                         "127.0.0.1:9000",
		"FINSVC_DATA_DIR":                     "/var/lib/finsvc",
		"FINSVC_DATABASE_URL":                 "postgres://u:pw@db/finsvc",
		"FINSVC_BASE_DOMAIN":                  "finsvc.example",
		"FINSVC_TRUST_PROXY":                  "true",
		"FINSVC_SECRET":                       strings.Repeat("s", 40),
		"FINSVC_ACCESS_TOKEN_TTL":             "30m",
		"FINSVC_REFRESH_TOKEN_TTL":            "48h",
		"FINSVC_AUTH_CODE_TTL":                "1m",
		"FINSVC_FETCH_WINDOW":                 "5m",
		"FINSVC_WEBHOOK_ALLOW_PRIVATE":        "1",
		"FINSVC_WEBHOOK_TIMEOUT":              "3s",
		"FINSVC_REDIS_URL":                    "redis://127.0.0.1:6379/0",
		"FINSVC_TLS_CERT":                     "c.pem",
		"FINSVC_TLS_KEY":                      "k.pem",
		"FINSVC_RATE_LIMIT_RPS":               "2.5",
		"FINSVC_RATE_LIMIT_BURST":             "7",
		"FINSVC_LOG_FORMAT":                   "JSON",
		"FINSVC_LOG_LEVEL":                    "debug",
		"FINSVC_NO_MIGRATE":                   "true",
		"FINSVC_SHUTDOWN_GRACE":               "2s",
		"FINSVC_BODY_LIMIT":                   "512K",
		"FINSVC_RATE_LIMIT_ADDRESS_RPS":       "0.5",
		"FINSVC_RATE_LIMIT_ADDRESS_BURST":     "9",
		"FINSVC_EVENT_RETENTION":              "48h",
		"FINSVC_AUDIT_RETENTION":              "2400h",
		"FINSVC_DATABASE_DIRECT_URL":          "postgres://u:pw@db:5432/finsvc",
		"FINSVC_DATABASE_POOLER":              "transaction",
		"FINSVC_WEBHOOK_CONCURRENCY":          "12",
		"FINSVC_WEBHOOK_ENDPOINT_CONCURRENCY": "3",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Addr: "127.0.0.1:9000", DataDir: "/var/lib/finsvc", DatabaseURL: "postgres://u:pw@db/finsvc", DatabaseDirectURL: "postgres://u:pw@db:5432/finsvc",
		DatabasePooler: "transaction", BaseDomain: "finsvc.example", TrustProxy: true, Secret: strings.Repeat("s", 40),
		AccessTokenTTL: 30 * time.Minute, RefreshTokenTTL: 48 * time.Hour, AuthCodeTTL: time.Minute,
		FetchWindow: 5 * time.Minute, EventRetention: 48 * time.Hour, AuditRetention: 2400 * time.Hour, WebhookAllowPrivate: true, WebhookTimeout: 3 * time.Second,
		WebhookConcurrency: 12, WebhookEndpointConcurrency: 3,
		RedisURL: "redis://127.0.0.1:6379/0", TLSCert: "c.pem", TLSKey: "k.pem",
		RateLimitRPS: 2.5, RateLimitBurst: 7, RateLimitAddressRPS: 0.5, RateLimitAddressBurst: 9,
		LogFormat: "json", LogLevel: slog.LevelDebug, NoMigrate: true, ShutdownGrace: 2 * time.Second, BodyLimit: 512 << 10,
	}
	if *c != want {
		t.Errorf("LoadEnv:\n got %+v\nwant %+v", *c, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if !c.TLS() {
		t.Error("TLS() = false with cert and key")
	}
}

func TestLoadEnvErrorsNameTheVariable(t *testing.T) {
	for k, v := range map[string]string{
		"FINSVC_FETCH_WINDOW":     "thirty minutes",
		"FINSVC_TRUST_PROXY":      "yes please",
		"FINSVC_RATE_LIMIT_BURST": "many",
		"FINSVC_RATE_LIMIT_RPS":   "NaN",
		"FINSVC_LOG_FORMAT":       "xml",
		"FINSVC_LOG_LEVEL":        "loud",
		"FINSVC_BODY_LIMIT":       "1X",
	} {
		err := Default().LoadEnvFrom(env(map[string]string{k: v}))
		if err == nil || !strings.HasPrefix(err.Error(), k+": ") {
			t.Errorf("%s=%q: error %v, want one starting with %q", k, v, err, k+": ")
		}
	}
	// Several bad values are all reported.
	err := Default().LoadEnvFrom(env(map[string]string{"FINSVC_FETCH_WINDOW": "x", "FINSVC_WEBHOOK_TIMEOUT": "y"}))
	if err == nil || !strings.Contains(err.Error(), "FINSVC_FETCH_WINDOW") || !strings.Contains(err.Error(), "FINSVC_WEBHOOK_TIMEOUT") {
		t.Errorf("two bad values: %v", err)
	}
}

func TestFlagsOverrideEnv(t *testing.T) {
	c := Default()
	if err := c.LoadEnvFrom(env(map[string]string{"FINSVC_ADDR": ":1", "FINSVC_FETCH_WINDOW": "1m", "FINSVC_TRUST_PROXY": "true"})); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.RegisterFlags(fs)
	if err := fs.Parse([]string{"--addr", "127.0.0.1:0", "--fetch-window=2m", "--trust-proxy=false", "--webhook-allow-private", "--body-limit", "2M", "--data", "/d"}); err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:0" || c.FetchWindow != 2*time.Minute || c.TrustProxy || !c.WebhookAllowPrivate || c.BodyLimit != 2<<20 || c.DataDir != "/d" {
		t.Errorf("flags did not override: %+v", c)
	}
	if fs.Lookup("secret") != nil {
		t.Error("the secret must not be a flag (it would show in ps)")
	}
	if err := fs.Parse([]string{"--fetch-window", "soon"}); err == nil || !strings.Contains(err.Error(), "invalid duration") {
		t.Errorf("bad flag value: %v", err)
	}
}

func TestRegisterFlagsOnly(t *testing.T) {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	Default().RegisterFlagsOnly(fs, "data", "database-url")
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if strings.Join(names, ",") != "data,database-url" {
		t.Errorf("flags = %v", names)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"empty addr", func(c *Config) { c.Addr = "" }, "addr"},
		{"no storage", func(c *Config) { c.DataDir = "" }, "data"},
		{"base domain with port", func(c *Config) { c.BaseDomain = "localhost:8080" }, "base-domain"},
		{"uppercase base domain", func(c *Config) { c.BaseDomain = "Example.com" }, "base-domain"},
		{"zero ttl", func(c *Config) { c.AccessTokenTTL = 0 }, "access-token-ttl"},
		{"negative window", func(c *Config) { c.FetchWindow = -time.Second }, "fetch-window"},
		{"cert without key", func(c *Config) { c.TLSCert = "c.pem" }, "tls-cert and tls-key"},
		{"negative rps", func(c *Config) { c.RateLimitRPS = -1 }, "rate-limit-rps"},
		{"zero burst", func(c *Config) { c.RateLimitBurst = 0 }, "rate-limit-burst"},
		{"negative address rps", func(c *Config) { c.RateLimitAddressRPS = -1 }, "rate-limit-address-rps"},
		{"zero address burst", func(c *Config) { c.RateLimitAddressBurst = 0 }, "rate-limit-address-burst"},
		{"lease not above the timeout", func(c *Config) { c.WebhookLease = c.WebhookTimeout }, "webhook-lease (FINSVC_WEBHOOK_LEASE): must exceed"},
		{"audit retention under 90 days", func(c *Config) { c.AuditRetention = 89 * 24 * time.Hour }, "audit-retention (FINSVC_AUDIT_RETENTION): must be at least 2160h0m0s"},
		{"retention under an hour", func(c *Config) { c.EventRetention = 59 * time.Minute }, "event-retention (FINSVC_EVENT_RETENTION): must be at least 1h0m0s"},
		{"bad redis", func(c *Config) { c.RedisURL = "http://x" }, "redis-url"},
		{"no workers", func(c *Config) { c.WebhookConcurrency = 0 }, "FINSVC_WEBHOOK_CONCURRENCY"},
		{"no endpoint slot", func(c *Config) { c.WebhookEndpointConcurrency = 0 }, "FINSVC_WEBHOOK_ENDPOINT_CONCURRENCY"},
		{"short secret", func(c *Config) { c.Secret = "short" }, "FINSVC_SECRET"},
		{"previous without current", func(c *Config) { c.SecretPrevious = strings.Repeat("p", 40) }, "need FINSVC_SECRET"},
		{"short previous", func(c *Config) { c.Secret, c.SecretPrevious = strings.Repeat("s", 40), "short" }, "FINSVC_SECRET_PREVIOUS: secret 1 must be at least"},
		{"revoked unknown", func(c *Config) { c.Secret, c.SecretRevoked = strings.Repeat("s", 40), "deadbeef" }, "FINSVC_SECRET_REVOKED"},
	}
	for _, tt := range tests {
		c := Default()
		tt.mutate(c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate() = %v, want mention of %q", tt.name, err, tt.want)
		}
	}
	c := Default()
	c.RateLimitRPS, c.RateLimitBurst = 0, 0 // rate limiting off: burst irrelevant
	if err := c.Validate(); err != nil {
		t.Errorf("rate limiting off: %v", err)
	}
}

func TestPrintSettingsListsEverySetting(t *testing.T) {
	var b bytes.Buffer
	PrintSettings(&b)
	out := b.String()
	c := Default()
	for _, s := range c.settings() {
		if !strings.Contains(out, s.Env) {
			t.Errorf("help lacks %s", s.Env)
		}
		if s.Flag != "" && !strings.Contains(out, "--"+s.Flag) {
			t.Errorf("help lacks --%s", s.Flag)
		}
	}
	for _, want := range []string{":8080", "./data", "localhost", "30m", "720h", "15s", "1M", "text", "info", "(generated)"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks default %q:\n%s", want, out)
		}
	}
	if len(List()) != len(c.settings()) {
		t.Error("List() does not cover every setting")
	}
}

func TestLogValueRedacts(t *testing.T) {
	c := Default()
	c.Secret = strings.Repeat("topsecret", 5)
	c.DatabaseURL = "postgres://app:hunter2@db:5432/finsvc?sslmode=require"
	c.RedisURL = "redis://:redispw@cache:6379/0"
	var b bytes.Buffer
	slog.New(slog.NewTextHandler(&b, nil)).Info("config", "config", c)
	out := b.String()
	for _, leak := range []string{"topsecret", "hunter2", "redispw"} {
		if strings.Contains(out, leak) {
			t.Errorf("log line leaks %q: %s", leak, out)
		}
	}
	if !strings.Contains(out, "db:5432/finsvc") || !strings.Contains(out, "secret_set=true") {
		t.Errorf("log line lost useful detail: %s", out)
	}
	if got := redactURL("host=db password=hunter2"); strings.Contains(got, "hunter2") {
		t.Errorf("key=value DSN leaked: %s", got)
	}
}

func TestDurationString(t *testing.T) {
	for d, want := range map[time.Duration]string{time.Hour: "1h", 720 * time.Hour: "720h", 10 * time.Minute: "10m",
		90 * time.Minute: "1h30m", 15 * time.Second: "15s", 1500 * time.Millisecond: "1.5s", 0: "0s"} {
		v := durationValue(d)
		if got := v.String(); got != want {
			t.Errorf("String(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestSizes(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "1048576": 1 << 20, "512K": 512 << 10, "1M": 1 << 20, "1mb": 1 << 20, "1MiB": 1 << 20, "2G": 2 << 30, " 3k ": 3 << 10} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "1X", "1I", "M", "1.5M", "99999999999G"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) succeeded", in)
		}
	}
	for n, want := range map[int64]string{1 << 20: "1M", 1536: "1536", 3 << 10: "3K", 1: "1"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestResolveSecret(t *testing.T) {
	dir := t.TempDir()
	c := Default()
	c.DataDir = filepath.Join(dir, "data")
	gen, err := c.ResolveSecret("sqlite")
	if err != nil || !gen || len(c.Secret) < MinSecretLen {
		t.Fatalf("first ResolveSecret = %v, %v, secret len %d", gen, err, len(c.Secret))
	}
	fi, err := os.Stat(filepath.Join(c.DataDir, SecretFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret file: %v, mode %v; want 0600", err, fi.Mode())
	}
	// A restart reads the same secret back.
	c2 := Default()
	c2.DataDir = c.DataDir
	gen, err = c2.ResolveSecret("sqlite")
	if err != nil || gen || c2.Secret != c.Secret {
		t.Errorf("second ResolveSecret = %v, %v; secret changed: %v", gen, err, c2.Secret != c.Secret)
	}
	// An explicit secret wins and is never written.
	c3 := Default()
	c3.DataDir = filepath.Join(dir, "other")
	c3.Secret = strings.Repeat("x", MinSecretLen)
	if gen, err := c3.ResolveSecret("sqlite"); err != nil || gen {
		t.Errorf("explicit secret: %v, %v", gen, err)
	}
	if _, err := os.Stat(filepath.Join(c3.DataDir, SecretFile)); !os.IsNotExist(err) {
		t.Error("explicit secret was persisted")
	}
	// PostgreSQL requires it.
	c4 := Default()
	if _, err := c4.ResolveSecret("postgres"); err == nil || !strings.Contains(err.Error(), "FINSVC_SECRET is required") {
		t.Errorf("postgres without secret: %v", err)
	}
	c4.Secret = "short"
	if _, err := c4.ResolveSecret("postgres"); err == nil {
		t.Error("short secret accepted")
	}
	// A truncated secret file is an error, not silently replaced.
	c5 := Default()
	c5.DataDir = t.TempDir()
	os.WriteFile(filepath.Join(c5.DataDir, SecretFile), []byte("abc\n"), 0o600)
	if _, err := c5.ResolveSecret("sqlite"); err == nil {
		t.Error("short secret file accepted")
	}
}

func TestNewLogger(t *testing.T) {
	c := Default()
	c.LogFormat = "json"
	c.LogLevel = slog.LevelWarn
	var b bytes.Buffer
	l := c.NewLogger(&b)
	l.Info("hidden")
	l.Warn("shown", "k", 1)
	if out := b.String(); strings.Contains(out, "hidden") || !strings.HasPrefix(out, "{") || !strings.Contains(out, `"msg":"shown"`) {
		t.Errorf("json logger output: %q", out)
	}
}

// TestREADMEListsEverySetting keeps the configuration table
// (docs/configuration.md, linked from the README) in step with the
// settings table.
func TestREADMEListsEverySetting(t *testing.T) {
	b, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Skipf("docs/configuration.md not found: %v", err)
	}
	for _, s := range List() {
		if !strings.Contains(string(b), "`"+s.Env+"`") {
			t.Errorf("docs/configuration.md does not document %s", s.Env)
		}
	}
}

// The pooler decides the query mode: declared, or implied by a direct URL.
func TestBehindPooler(t *testing.T) {
	for _, c := range []struct {
		pooler, url, direct string
		want                bool
	}{
		{"auto", "postgres://pgbouncer/db", "", false},
		{"auto", "postgres://pgbouncer/db", "postgres://pg/db", true},
		{"auto", "postgres://pg/db", "postgres://pg/db", false},
		{"none", "postgres://pgbouncer/db", "postgres://pg/db", false},
		{"transaction", "postgres://pgbouncer/db", "", true},
	} {
		cfg := &Config{DatabasePooler: c.pooler, DatabaseURL: c.url, DatabaseDirectURL: c.direct}
		if got := cfg.BehindPooler(); got != c.want {
			t.Errorf("%+v: BehindPooler = %v; want %v", c, got, c.want)
		}
	}
}

// A replica refuses to start on a malformed key ring, also when the current
// secret is the generated one (SQLite).
func TestResolveSecretRefusesMalformedRing(t *testing.T) {
	c := Default()
	c.DataDir = t.TempDir()
	c.SecretPrevious = "too short"
	if _, err := c.ResolveSecret("sqlite"); err == nil || !strings.Contains(err.Error(), "FINSVC_SECRET_PREVIOUS") {
		t.Fatalf("ResolveSecret = %v", err)
	}
	c = Default()
	c.Secret, c.SecretPrevious = strings.Repeat("s", 40), strings.Repeat("p", 40)
	if _, err := c.ResolveSecret("postgres"); err != nil {
		t.Fatal(err)
	}
	r, err := c.Ring()
	if err != nil || len(r.IDs()) != 2 {
		t.Fatalf("Ring = %v %v", r, err)
	}
}
