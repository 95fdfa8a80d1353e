package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/finsvc/finsvc/internal/tenant"
)

func init() {
	registerSub("tenant", "manage tenants", &command{name: "create", synopsis: "create a tenant: tenant create <slug> [--name N]", run: runTenantCreate})
}

func runTenantCreate(ctx context.Context, c *cli, args []string) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	fs := flagSet("tenant create")
	cfg.RegisterFlagsOnly(fs, dbFlags...)
	name := fs.String("name", "", "display name (default: the slug)")
	asJSON := fs.Bool("json", false, "print the tenant as JSON")
	usage := func(w io.Writer) {
		printFlags(w, fs, "finsvc tenant create <slug> [flags]",
			"Creates a tenant. The slug (2-63 of a-z, 0-9, -) is its subdomain:\n<slug>.<base-domain>.")
	}
	pos, err := parse(c, fs, args, usage)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want exactly one slug, got %d arguments", len(pos))
	}
	if err := validate(cfg); err != nil {
		return err
	}
	d, err := openDB(ctx, cfg, c)
	if err != nil {
		return err
	}
	defer d.Close()
	t, err := tenant.NewStore(d).Create(ctx, pos[0], *name)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(c.stdout).Encode(t)
	}
	fmt.Fprintf(c.stdout, "created tenant %s (id %d, name %q)\n", t.Slug, t.ID, t.Name)
	return nil
}
