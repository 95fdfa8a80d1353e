package main

import (
	"encoding/json"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/oauth/store"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/users"
)

// eachDialect runs fn with the environment of a CLI on a fresh SQLite data
// directory and on a fresh PostgreSQL database (skipped without
// FINSVC_TEST_DATABASE_URL).
func eachDialect(t *testing.T, fn func(t *testing.T, env map[string]string)) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := map[string]string{"FINSVC_DATA_DIR": t.TempDir(), "FINSVC_LOG_LEVEL": "warn"}
			if dialect == db.Postgres {
				pooled, direct := testdb.URLs(t, testdb.Postgres(t))
				env["FINSVC_DATABASE_URL"], env["FINSVC_DATABASE_DIRECT_URL"] = pooled, direct
			}
			fn(t, env)
		})
	}
}

// The password policy on `finsvc user create --password`.
func TestUserCreatePasswordPolicy(t *testing.T) {
	eachDialect(t, func(t *testing.T, env map[string]string) {
		if r := exec(t, env, "tenant", "create", "acme", "--name", "Acme Holdings"); r.code != 0 {
			t.Fatalf("tenant create: %+v", r)
		}
		for _, tc := range []struct{ password, why string }{
			{"password", "password must be at least 12 characters"},
			{"12345678", "password must be at least 12 characters"},
			{"        ", "password must be at least 12 characters"},
			{"password1234", "password is a commonly used password"},
			{"Qwerty123456", "password is a commonly used password"},
			{"acmeholdings2024", "organization's name"},
			{"kari.nordmann99", "email address"},
		} {
			r := exec(t, env, "user", "create", "--tenant", "acme", "--email", "kari.nordmann@acme.example.com", "--role", "member", "--password", tc.password)
			if r.code != 1 || !strings.Contains(r.stderr, tc.why) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("--password %q: %+v, want exit 1 saying %q", tc.password, r, tc.why)
			}
		}
		r := exec(t, env, "user", "create", "--tenant", "acme", "--email", "kari.nordmann@acme.example.com", "--role", "member", "--password", "cantaloupe in a red wheelbarrow")
		if r.code != 0 || !strings.Contains(r.stdout, "created user 1 kari.nordmann@acme.example.com") || strings.Contains(r.stdout, "password:") {
			t.Errorf("a passphrase: %+v", r)
		}
	})
}

// TestDemoLoopbackByDefault: without --addr the demo answers on 127.0.0.1
// and [::1] and on no other address of the machine, on FINSVC_ADDR's port
// (":0" here: a free one); --addr :0 listens on every interface.
func TestDemoLoopbackByDefault(t *testing.T) {
	others := nonLoopbackIPs(t)
	demoPort := func(t *testing.T, stdout *syncBuffer) string {
		t.Helper()
		re := regexp.MustCompile(`base URL:\s+http://demo\.localhost:(\d+)`)
		waitFor(t, "demo instructions", func() bool { return strings.Contains(stdout.String(), "curl ") })
		m := re.FindStringSubmatch(stdout.String())
		if m == nil {
			t.Fatalf("no base URL in %s", stdout.String())
		}
		return m[1]
	}
	answers := func(host, port string) bool {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), 2*time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	}

	stdout, _, stop := startCmd(t, map[string]string{"FINSVC_LOG_LEVEL": "warn", "FINSVC_ADDR": ":0"}, "demo")
	port := demoPort(t, stdout)
	if code, _ := get(t, "http://127.0.0.1:"+port+"/healthz", "demo.localhost"); code != http.StatusOK {
		t.Errorf("127.0.0.1: %d", code)
	}
	if ln, err := net.Listen("tcp", "[::1]:0"); err == nil {
		ln.Close()
		if code, _ := get(t, "http://[::1]:"+port+"/healthz", "demo.localhost"); code != http.StatusOK {
			t.Errorf("[::1]: %d", code)
		}
	}
	for _, ip := range others {
		if answers(ip, port) {
			t.Errorf("the demo without --addr answers on %s", ip)
		}
	}
	if got := stop(); got != 0 {
		t.Errorf("exit %d", got)
	}

	if len(others) == 0 {
		t.Skip("no address but loopback on this machine to check --addr :0 against")
	}
	stdout, _, _ = startCmd(t, map[string]string{"FINSVC_LOG_LEVEL": "warn"}, "demo", "--addr", ":0")
	port = demoPort(t, stdout)
	if !answers(others[0], port) {
		t.Errorf("the demo with --addr :0 does not answer on %s", others[0])
	}
}

// nonLoopbackIPs are this machine's unicast addresses other than loopback
// and link-local ones.
func nonLoopbackIPs(t *testing.T) []string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if ok && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() && !ipn.IP.IsUnspecified() {
			out = append(out, ipn.IP.String())
		}
	}
	return out
}

// `finsvc app rotate` keeps the replaced secret, as a digest, for
// --overlap (24 h by default; now: none), and `app end-overlap` drops it.
func TestAppRotate(t *testing.T) {
	eachDialect(t, func(t *testing.T, env map[string]string) {
		if r := exec(t, env, "tenant", "create", "acme"); r.code != 0 {
			t.Fatalf("tenant create: %+v", r)
		}
		r := exec(t, env, "app", "create", "--tenant", "acme", "--name", "ERP", "--redirect-uri", "https://erp.example.com/cb", "--json")
		var app struct {
			ClientID     string     `json:"client_id"`
			ClientSecret string     `json:"client_secret"`
			Until        *time.Time `json:"previous_secret_expires_at"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &app) != nil {
			t.Fatalf("app create: %+v", r)
		}
		stored := func() store.Client {
			t.Helper()
			d, err := openForTest(t, env)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			var c store.Client
			if err := d.Where("id = ?", app.ClientID).Take(&c).Error; err != nil {
				t.Fatal(err)
			}
			return c
		}
		rotate := func(args ...string) (secret string, until *time.Time) {
			t.Helper()
			r := exec(t, env, append([]string{"app", "rotate", "--tenant", "acme", "--app", app.ClientID, "--json"}, args...)...)
			var out struct {
				ClientSecret string     `json:"client_secret"`
				Until        *time.Time `json:"previous_secret_expires_at"`
			}
			if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil || len(out.ClientSecret) != 43 {
				t.Fatalf("app rotate %v: %+v", args, r)
			}
			return out.ClientSecret, out.Until
		}

		first := app.ClientSecret
		second, until := rotate()
		if until == nil || time.Until(*until) < 23*time.Hour+59*time.Minute || time.Until(*until) > 24*time.Hour {
			t.Errorf("default window ends at %v, want in 24 h", until)
		}
		c := stored()
		if c.SecretHash != store.HashSecret(second) || c.PreviousSecretHash != store.HashSecret(first) || c.PreviousSecretUntil(time.Now()) == nil {
			t.Errorf("after rotate: %+v", c)
		}
		if got := c.PreviousSecretUntil(time.Now().Add(25 * time.Hour)); got != nil {
			t.Errorf("the old secret is still valid after 25 h: %v", got)
		}
		third, until := rotate("--overlap", "90m")
		if c := stored(); until == nil || time.Until(*until) > 90*time.Minute || c.PreviousSecretHash != store.HashSecret(second) || c.SecretHash != store.HashSecret(third) {
			t.Errorf("--overlap 90m: until %v, stored %+v", until, c)
		}
		if r := exec(t, env, "app", "end-overlap", "--tenant", "acme", "--app", app.ClientID); r.code != 0 || !strings.Contains(r.stdout, "no longer works") {
			t.Errorf("end-overlap: %+v", r)
		}
		if c := stored(); c.PreviousSecretHash != "" || c.PreviousSecretUntil(time.Now()) != nil {
			t.Errorf("after end-overlap: %+v", c)
		}
		fourth, until := rotate("--overlap", "now")
		if c := stored(); until != nil || c.PreviousSecretHash != "" || c.SecretHash != store.HashSecret(fourth) {
			t.Errorf("--overlap now: until %v, stored %+v", until, c)
		}
		r = exec(t, env, "app", "rotate", "--tenant", "acme", "--app", app.ClientID)
		if r.code != 0 || !strings.Contains(r.stdout, "client secret: ") || !strings.Contains(r.stdout, "keeps working until ") {
			t.Errorf("text output: %+v", r)
		}
		for _, tc := range []struct {
			args []string
			code int
			msg  string
		}{
			{[]string{"rotate", "--tenant", "acme"}, 2, "--app is required"},
			{[]string{"rotate", "--app", app.ClientID}, 2, "--tenant is required"},
			{[]string{"rotate", "--tenant", "acme", "--app", app.ClientID, "--overlap", "721h"}, 2, "--overlap"},
			{[]string{"rotate", "--tenant", "acme", "--app", app.ClientID, "--overlap", "soon"}, 2, "--overlap"},
			{[]string{"rotate", "--tenant", "acme", "--app", "app_nope"}, 1, "app not found"},
			{[]string{"end-overlap", "--tenant", "acme", "--app", "app_nope"}, 1, "app not found"},
		} {
			r := exec(t, env, append([]string{"app"}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
				t.Errorf("app %v: %+v, want exit %d with %q", tc.args, r, tc.code, tc.msg)
			}
		}
	})
}

// openForTest opens the database the CLI environment env points at.
func openForTest(t *testing.T, env map[string]string) (*db.DB, error) {
	return db.Open(t.Context(), env["FINSVC_DATABASE_URL"], env["FINSVC_DATA_DIR"], testdb.Logger())
}

// `finsvc user create` without --password prints a one-time password: it
// signs in once, and that sign-in must choose a password.
func TestUserCreateOneTimePassword(t *testing.T) {
	eachDialect(t, func(t *testing.T, env map[string]string) {
		if r := exec(t, env, "tenant", "create", "acme"); r.code != 0 {
			t.Fatalf("tenant create: %+v", r)
		}
		r := exec(t, env, "user", "create", "--tenant", "acme", "--email", "ola@acme.example.com", "--role", "member", "--json")
		var out struct{ Password string }
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil || len(out.Password) != 20 {
			t.Fatalf("user create: %+v", r)
		}
		d, err := openForTest(t, env)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		tn, err := tenant.NewStore(d).BySlug(t.Context(), "acme")
		if err != nil {
			t.Fatal(err)
		}
		ctx := tenant.NewContext(t.Context(), tn)
		s := users.NewStore(d)
		if u, err := s.Authenticate(ctx, "ola@acme.example.com", out.Password); err != nil || !u.PasswordChangeRequired {
			t.Fatalf("first sign-in: %+v, %v", u, err)
		}
		if _, err := s.Authenticate(ctx, "ola@acme.example.com", out.Password); err == nil {
			t.Fatal("the printed password signs in twice")
		}
	})
}
