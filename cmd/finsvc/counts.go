package main

import (
	"context"
	"fmt"
	"io"

	"github.com/finsvc/finsvc/internal/counts"
	"github.com/finsvc/finsvc/internal/db"
)

func init() {
	const group = "maintain the stored list totals"
	registerSub("counts", group, &command{name: "check", synopsis: "compare the stored list totals with the rows (exit 1 on a difference)", run: runCountsCheck})
	registerSub("counts", group, &command{name: "rebuild", synopsis: "recompute the stored list totals from the rows", run: runCountsRebuild})
}

// countsDB parses the flags of a counts subcommand and opens the database.
func countsDB(ctx context.Context, c *cli, args []string, name, about string) (*db.DB, error) {
	cfg, err := loadConfig(c)
	if err != nil {
		return nil, err
	}
	fs := flagSet("counts " + name)
	cfg.RegisterFlagsOnly(fs, dbFlags...)
	usage := func(w io.Writer) { printFlags(w, fs, "finsvc counts "+name+" [flags]", about) }
	pos, err := parse(c, fs, args, usage)
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		return nil, usagef("unexpected argument %q", pos[0])
	}
	if err := validate(cfg); err != nil {
		return nil, err
	}
	return openDB(ctx, cfg, c)
}

func runCountsCheck(ctx context.Context, c *cli, args []string) error {
	d, err := countsDB(ctx, c, args, "check",
		"Compares every stored list total (list_counts, list_blocks) with COUNT(*) of\nthe rows, across tenants. Reads whole tables: run it off-peak.")
	if err != nil {
		return err
	}
	defer d.Close()
	ms, err := counts.Check(ctx, d.DB)
	if err != nil {
		return err
	}
	for _, m := range ms {
		fmt.Fprintln(c.stdout, m)
	}
	if len(ms) > 0 {
		return fmt.Errorf("%d stored totals differ from the rows; run finsvc counts rebuild", len(ms))
	}
	fmt.Fprintln(c.stdout, "every stored total matches the rows")
	return nil
}

func runCountsRebuild(ctx context.Context, c *cli, args []string) error {
	d, err := countsDB(ctx, c, args, "rebuild",
		"Recomputes every stored list total from the rows, in one transaction (on\nPostgreSQL writes to the counted tables wait for it). Run it after loading rows\nwith triggers disabled, or when finsvc counts check reports differences.")
	if err != nil {
		return err
	}
	defer d.Close()
	if err := counts.Rebuild(ctx, d.DB, d.Dialect == db.Postgres); err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, "list totals rebuilt")
	return nil
}
