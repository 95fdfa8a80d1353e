package main

import (
	"strings"
	"testing"

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
