package main

import (
	"context"
	"fmt"
	"io"

	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/server"
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

	a, err := app.New(cfg, app.WithLogger(logger))
	if err != nil {
		return err
	}
	defer a.Close()
	srv, err := server.Listen(cfg, logger)
	if err != nil {
		return err
	}
	if err := a.Start(ctx); err != nil {
		srv.Close()
		return err
	}
	srv.OnShutdown(a.Stop) // drain deliveries alongside in-flight requests
	logger.Info("starting finsvc", "dialect", a.DB().Dialect, "config", cfg)
	return srv.Serve(ctx, a.Handler())
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
