package main

import (
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/mfa"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/users"
)

// `finsvc user reset-mfa` removes a user's second factor (for a locked-out
// last admin), audited as the service's, and the user is told at their
// next sign-in; a user without one, an unknown email and missing flags are
// said so.
func TestUserResetMFA(t *testing.T) {
	env := map[string]string{"FINSVC_DATA_DIR": t.TempDir(), "FINSVC_LOG_LEVEL": "warn", "FINSVC_SECRET": "0123456789abcdef0123456789abcdef"}
	if r := exec(t, env, "tenant", "create", "acme"); r.code != 0 {
		t.Fatalf("tenant create: %+v", r)
	}
	if r := exec(t, env, "user", "create", "--tenant", "acme", "--email", "ada@acme.io", "--role", "admin", "--password", "cantaloupe in a red wheelbarrow"); r.code != 0 {
		t.Fatalf("user create: %+v", r)
	}
	// Enrol her through the store, as the console does.
	c := &cli{getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	cfg, err := loadConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	d, tn, err := openTenantDB(t.Context(), cfg, c, "acme")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ring, err := resolveRing(cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	box, _ := sealing.NewFor(ring, mfa.SealPurpose)
	us := users.NewStore(d)
	store, _ := mfa.New(d, box, us, "finsvc")
	ctx := tenant.NewContext(t.Context(), tn)
	u, err := us.ByEmail(ctx, "ada@acme.io")
	if err != nil {
		t.Fatal(err)
	}
	e, err := store.BeginTOTP(ctx, u.ID, u.Email)
	if err != nil {
		t.Fatal(err)
	}
	code, _ := totp.GenerateCode(e.Key.Secret(), time.Now())
	if _, err := store.ConfirmTOTP(ctx, u.ID, code); err != nil {
		t.Fatal(err)
	}

	r := exec(t, env, "user", "reset-mfa", "--tenant", "acme", "--email", "ada@acme.io")
	if r.code != 0 || !strings.Contains(r.stdout, "removed the second factor of user") {
		t.Fatalf("reset-mfa: %+v", r)
	}
	if st, _ := store.Status(ctx, u.ID); st.Has() || st.RecoveryRemaining != 0 {
		t.Fatalf("after reset-mfa: %+v", st)
	}
	var row audit.Row
	if err := d.Where("action = ?", audit.MFARemoved).Take(&row).Error; err != nil || row.ActorType != audit.ActorSystem || row.TargetID != "1" {
		t.Fatalf("audit record of the reset: %+v %v", row, err)
	}
	if told, _ := store.TakeResetNotice(ctx, u.ID); !told {
		t.Fatal("the user would not be told at their next sign-in")
	}
	if r := exec(t, env, "user", "reset-mfa", "--tenant", "acme", "--email", "ada@acme.io"); r.code != 0 || !strings.Contains(r.stdout, "nothing to remove") {
		t.Fatalf("reset-mfa again: %+v", r)
	}
	if r := exec(t, env, "user", "reset-mfa", "--tenant", "acme", "--email", "nobody@acme.io"); r.code != 1 {
		t.Fatalf("reset-mfa of an unknown email: %+v", r)
	}
	if r := exec(t, env, "user", "reset-mfa", "--tenant", "acme"); r.code != 2 || !strings.Contains(r.stderr, "--email is required") {
		t.Fatalf("reset-mfa without --email: %+v", r)
	}
}
