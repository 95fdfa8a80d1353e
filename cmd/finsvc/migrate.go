package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/finsvc/finsvc/internal/db"
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
	discard := fs.String("discard", "", "with --down-to, the `tables` (comma-separated) whose records the roll back may destroy: a roll back that drops a kept table holding records (audit_log) is refused unless it is named here")
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
	var tables []string
	if *discard != "" {
		if *downTo < 0 {
			return usagef("--discard needs --down-to")
		}
		for _, t := range strings.Split(*discard, ",") {
			t = strings.TrimSpace(t)
			if !slices.ContainsFunc(db.Kept, func(k db.KeptTable) bool { return k.Table == t }) {
				return usagef("--discard: %q is not a kept table (%s)", t, keptNames())
			}
			tables = append(tables, t)
		}
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
		err = d.MigrateDownTo(ctx, *downTo, tables...)
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

// keptNames lists the tables --discard accepts.
func keptNames() string {
	var names []string
	for _, k := range db.Kept {
		names = append(names, k.Table)
	}
	return strings.Join(names, ", ")
}
