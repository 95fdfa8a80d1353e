package main

import (
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/pkg/db"
	"github.com/finsvc/finsvc/pkg/testdb"
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
