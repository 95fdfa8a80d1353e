package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
)

// flagSet returns a FlagSet that reports errors to us instead of printing:
// run prints exactly one line per failure.
func flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses args, allowing flags after positional arguments
// (`tenant create acme --name Acme`). --help prints usage to stdout and
// returns errHelp; a bad flag is a usageError.
func parse(c *cli, fs *flag.FlagSet, args []string, usage func(io.Writer)) ([]string, error) {
	var pos []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			usage(c.stdout)
			return nil, errHelp
		}
		if err != nil {
			return nil, usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

// printFlags writes a usage header and fs's flags. Defaults of config
// settings come from config.Default, not from the flag: the flag's value was
// loaded from the environment and may hold a password (FINSVC_DATABASE_URL).
func printFlags(w io.Writer, fs *flag.FlagSet, synopsis, description string) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", synopsis, strings.TrimSpace(description))
	defaults := map[string]string{}
	for _, s := range config.List() {
		if s.Flag != "" {
			defaults[s.Flag] = s.Default
		}
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		placeholder, usage := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !bf.IsBoolFlag() {
			name += " " + strings.ToUpper(placeholder)
		}
		def, ok := defaults[f.Name]
		if !ok {
			def = f.DefValue
		}
		if def != "" && def != "false" && def != "0" && def != "-1" {
			usage += " (default " + def + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, usage)
	})
	tw.Flush()
	if b.Len() > 0 {
		fmt.Fprintf(w, "\nFlags:\n%s", b.String())
	}
}

// loadConfig returns the defaults overlaid with the environment. A bad
// environment value is a usage error (exit 2), like a bad flag.
func loadConfig(c *cli) (*config.Config, error) {
	cfg := config.Default()
	if err := cfg.LoadEnvFrom(c.getenv); err != nil {
		return nil, usageError{err.Error()}
	}
	return cfg, nil
}

// validate is Validate as a usage error.
func validate(cfg *config.Config) error {
	if err := cfg.Validate(); err != nil {
		return usageError{err.Error()}
	}
	return nil
}

// openDB opens the configured database and applies migrations unless
// NoMigrate.
func openDB(ctx context.Context, cfg *config.Config, c *cli) (*db.DB, error) {
	return app.OpenDB(ctx, cfg, cfg.NewLogger(c.stderr))
}

// openTenantDB opens the database (see openDB) and finds tenant slug in
// it, for the commands that act inside one tenant.
func openTenantDB(ctx context.Context, cfg *config.Config, c *cli, slug string) (*db.DB, *tenant.Tenant, error) {
	d, err := openDB(ctx, cfg, c)
	if err != nil {
		return nil, nil, err
	}
	t, err := tenant.NewStore(d).BySlug(ctx, slug)
	if err != nil {
		d.Close()
		if apperr.Is(err, apperr.NotFound) {
			return nil, nil, fmt.Errorf("tenant %q not found (create it with 'finsvc tenant create %s')", slug, slug)
		}
		return nil, nil, err
	}
	return d, t, nil
}

// dbFlags are the settings every database command takes.
var dbFlags = []string{"data", "database-url", "database-direct-url", "no-migrate", "log-format", "log-level"}
