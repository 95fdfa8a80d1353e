package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/mfa"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/users"
)

func init() {
	registerSub("user", "manage users", &command{name: "create", synopsis: "create a user: user create --tenant T --email E --role R", run: runUserCreate})
}

func runUserCreate(ctx context.Context, c *cli, args []string) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	fs := flagSet("user create")
	cfg.RegisterFlagsOnly(fs, dbFlags...)
	slug := fs.String("tenant", "", "tenant `slug` (required)")
	email := fs.String("email", "", "email address, the login (required)")
	role := fs.String("role", "", "role: admin, member or viewer (required)")
	name := fs.String("name", "", "display name")
	password := fs.String("password", "", "password: at least 12 characters, not common, not built from the email or the organization's name (default: generate a one-time password and print it)")
	asJSON := fs.Bool("json", false, "print {id, tenant, email, name, role, password} as JSON")
	usage := func(w io.Writer) {
		printFlags(w, fs, "finsvc user create --tenant T --email E --role R [flags]",
			"Creates a user in a tenant. Without --password a random one-time password is\ngenerated and printed (it is stored only as an argon2id hash). A chosen\npassword must pass the password policy (README, Security).")
	}
	pos, err := parse(c, fs, args, usage)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	for flagName, v := range map[string]string{"tenant": *slug, "email": *email, "role": *role} {
		if v == "" {
			return usagef("--%s is required", flagName)
		}
	}
	if err := validate(cfg); err != nil {
		return err
	}
	d, t, err := openTenantDB(ctx, cfg, c, *slug)
	if err != nil {
		return err
	}
	defer d.Close()
	u, pw, err := users.NewStore(d).CreateWithPassword(tenant.NewContext(ctx, t), *email, *name, *role, *password)
	if err != nil {
		return err
	}
	generated := pw != ""
	if *asJSON {
		out := struct {
			ID       int64  `json:"id"`
			Tenant   string `json:"tenant"`
			Email    string `json:"email"`
			Name     string `json:"name"`
			Role     string `json:"role"`
			Password string `json:"password,omitempty"`
		}{u.ID, t.Slug, u.Email, u.Name, u.Role, ""}
		if generated {
			out.Password = pw
		}
		return json.NewEncoder(c.stdout).Encode(out)
	}
	fmt.Fprintf(c.stdout, "created user %d %s (%s) in tenant %s\n", u.ID, u.Email, u.Role, t.Slug)
	if generated {
		fmt.Fprintf(c.stdout, "password: %s\n", pw)
		fmt.Fprintf(c.stdout, "(a one-time password: it works for one sign-in until %s, which leads to choosing a password)\n",
			u.PasswordExpiresAt.UTC().Format(time.RFC3339))
	}
	return nil
}

func init() {
	registerSub("user", "manage users", &command{name: "reset-mfa", synopsis: "remove a user's second factor: user reset-mfa --tenant T --email E", run: runUserResetMFA})
}

// runUserResetMFA removes a user's second factor (authenticator and
// recovery codes), for a last admin locked out with neither: audited as
// the service's own action, and the user is told at their next sign-in.
func runUserResetMFA(ctx context.Context, c *cli, args []string) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	fs := flagSet("user reset-mfa")
	cfg.RegisterFlagsOnly(fs, dbFlags...)
	slug := fs.String("tenant", "", "tenant `slug` (required)")
	email := fs.String("email", "", "the user's email address (required)")
	usage := func(w io.Writer) {
		printFlags(w, fs, "finsvc user reset-mfa --tenant T --email E [flags]",
			"Removes a user's second factor (their authenticator app and recovery codes):\nthey sign in with their password alone until they set up a new one (at once\nwhen the tenant's policy requires one of them). Recorded in the audit log.")
	}
	pos, err := parse(c, fs, args, usage)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	for flagName, v := range map[string]string{"tenant": *slug, "email": *email} {
		if v == "" {
			return usagef("--%s is required", flagName)
		}
	}
	if err := validate(cfg); err != nil {
		return err
	}
	d, t, err := openTenantDB(ctx, cfg, c, *slug)
	if err != nil {
		return err
	}
	defer d.Close()
	ring, err := resolveRing(cfg, d)
	if err != nil {
		return err
	}
	box, err := sealing.NewFor(ring, mfa.SealPurpose)
	if err != nil {
		return err
	}
	us := users.NewStore(d)
	store, err := mfa.New(d, box, us, "finsvc")
	if err != nil {
		return err
	}
	tctx := tenant.NewContext(ctx, t)
	u, err := us.ByEmail(tctx, *email)
	if err != nil {
		return err
	}
	st, err := store.Status(tctx, u.ID)
	if err != nil {
		return err
	}
	if err := store.Remove(tctx, audit.SystemActor, u.ID); err != nil {
		return err
	}
	if !st.Has() && st.RecoveryRemaining == 0 {
		fmt.Fprintf(c.stdout, "user %d %s in tenant %s has no second factor: nothing to remove\n", u.ID, u.Email, t.Slug)
		return nil
	}
	fmt.Fprintf(c.stdout, "removed the second factor of user %d %s in tenant %s; they are told at their next sign-in\n", u.ID, u.Email, t.Slug)
	return nil
}
