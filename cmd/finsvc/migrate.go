package main

import (
	"context"
	"fmt"
	"io"
)

func init() {
	register(&command{name: "migrate", synopsis: "apply database migrations (or roll back with --down-to)", run: runMigrate})
}

func runMigrate(ctx context.Context, c *cli, args []string) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	fs := flagSet("migrate")
	cfg.RegisterFlagsOnly(fs, "data", "database-url", "database-direct-url", "log-format", "log-level")
	status := fs.Bool("status", false, "only print the current and latest schema versions")
	downTo := fs.Int64("down-to", -1, "roll back to this `version` (0 removes everything) instead of migrating up")
	usage := func(w io.Writer) {
		printFlags(w, fs, "finsvc migrate [flags]", "Applies the embedded migrations for the configured database (idempotent; safe\nto run from several replicas at once on PostgreSQL).")
	}
	pos, err := parse(c, fs, args, usage)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *status && *downTo >= 0 {
		return usagef("--status and --down-to are exclusive")
	}
	if err := validate(cfg); err != nil {
		return err
	}
	cfg.NoMigrate = true // openDB must not migrate: this command decides
	// The migration lock is a session lock: behind a transaction pooler it
	// must go to the direct URL.
	cfg.DatabaseURL, cfg.DatabaseDirectURL = cfg.SessionDatabaseURL(), ""
	d, err := openDB(ctx, cfg, c)
	if err != nil {
		return err
	}
	defer d.Close()
	switch {
	case *status:
	case *downTo >= 0:
		err = d.MigrateDownTo(ctx, *downTo)
	default:
		err = d.Migrate(ctx)
	}
	if err != nil {
		return err
	}
	cur, latest, err := d.MigrationVersion(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s schema at version %d (latest %d)\n", d.Dialect, cur, latest)
	return nil
}
