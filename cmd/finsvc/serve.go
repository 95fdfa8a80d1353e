package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/finsvc/finsvc/pkg/config"
	"github.com/finsvc/finsvc/pkg/server"
)

func init() {
	register(&command{name: "serve", synopsis: "run the API server", run: runServe})
}

func runServe(ctx context.Context, c *cli, args []string) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	fs := flagSet("serve")
	cfg.RegisterFlags(fs)
	pos, err := parse(c, fs, args, serveUsage)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if err := validate(cfg); err != nil {
		return err
	}
	logger := cfg.NewLogger(c.stderr)

	d, err := openDB(ctx, cfg, c)
	if err != nil {
		return err
	}
	defer d.Close()
	generated, err := cfg.ResolveSecret(d.Dialect)
	if err != nil {
		return err
	}
	if generated {
		logger.Warn("generated a new secret; keep it with the data", "path", filepath.Join(cfg.DataDir, config.SecretFile))
	}
	srv, err := server.Listen(cfg, logger)
	if err != nil {
		return err
	}
	dl, err := startDeliveries(ctx, d, cfg, logger)
	if err != nil {
		srv.Close()
		return err
	}
	defer dl.Stop()
	srv.OnShutdown(dl.Stop) // drain deliveries alongside in-flight requests
	stopJanitor := startJanitor(ctx, d, logger)
	defer stopJanitor()
	srv.OnShutdown(stopJanitor)
	h, err := buildHandler(d, cfg, logger, dl.Deps)
	if err != nil {
		srv.Close()
		return fmt.Errorf("build HTTP handler: %w", err)
	}
	logger.Info("starting finsvc", "dialect", d.Dialect, "config", cfg)
	return srv.Serve(ctx, h)
}

func serveUsage(w io.Writer) {
	fmt.Fprint(w, `Usage: finsvc serve [flags]

Runs the API server. Applies pending database migrations first unless
--no-migrate. Stops gracefully on SIGINT/SIGTERM, giving in-flight requests
the shutdown grace period.

Every setting is read from its environment variable and may be overridden
by its flag (--flag=value). FINSVC_SECRET is environment-only.

Settings:
`)
	config.PrintSettings(w)
}
