package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

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
