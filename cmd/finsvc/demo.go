package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/demo"
	"github.com/finsvc/finsvc/internal/server"
)

func init() {
	register(&command{name: "demo", synopsis: "run a seeded demo server on SQLite", run: runDemo})
}

func runDemo(ctx context.Context, c *cli, args []string) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	fs := flagSet("demo")
	cfg.RegisterFlagsOnly(fs, "addr", "data", "base-domain", "log-format", "log-level", "fetch-window")
	usage := func(w io.Writer) {
		printFlags(w, fs, "finsvc demo [--addr ADDR] [--data DIR]", `
Starts a demo server on SQLite with a seeded tenant "demo" and an admin user,
prints how to log in and writes the details to <data>/demo.json:
{base_url, tenant, admin_email, admin_password, client_id, client_secret,
redirect_uri}. base_url carries the port actually bound (--addr 127.0.0.1:0
picks a free one).

Without --addr the demo listens on loopback only, 127.0.0.1 and [::1], on the
port of FINSVC_ADDR (default 8080): it prints the admin password and accepts
private webhook targets. Listening on other interfaces takes an explicit
--addr (for example --addr :8080).

Without --data the database lives in a new temporary directory that is removed
on exit. Webhook targets on private addresses and http:// are allowed.`)
	}
	pos, err := parse(c, fs, args, usage)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	dataGiven, addrGiven := false, false
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "data":
			dataGiven = true
		case "addr":
			addrGiven = true
		}
	})
	// The demo prints an admin password and accepts private webhook
	// targets: without --addr it listens on loopback only, whatever the
	// host of FINSVC_ADDR (its port is kept).
	loopback := !addrGiven
	if loopback {
		_, port, err := net.SplitHostPort(cfg.Addr)
		if err != nil {
			return usagef("FINSVC_ADDR %q: %v", cfg.Addr, err)
		}
		cfg.Addr = net.JoinHostPort("127.0.0.1", port)
	}
	// The demo is SQLite by definition, and always migrated.
	cfg.DatabaseURL, cfg.NoMigrate, cfg.WebhookAllowPrivate = "", false, true
	if !dataGiven {
		dir, err := os.MkdirTemp("", "finsvc-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.DataDir = dir
	}
	if err := validate(cfg); err != nil {
		return err
	}
	logger := cfg.NewLogger(c.stderr)

	// Bind first: base_url must carry the real port.
	srv, err := server.Listen(cfg, logger)
	if err != nil {
		return err
	}
	defer srv.Close()
	cfg.Addr = srv.Addr().String()
	if loopback {
		// IPv6 loopback too, on the same port, where the host has it.
		if err := srv.Also(net.JoinHostPort("::1", strconv.Itoa(srv.Addr().Port))); err != nil {
			logger.Debug("demo: no IPv6 loopback", "error", err)
		}
	}

	base, err := demo.BaseURL(cfg, demo.TenantSlug)
	if err != nil {
		return err
	}
	a, err := app.New(cfg, app.WithLogger(logger), app.WithDocsServerURL(base))
	if err != nil {
		return err
	}
	defer a.Close()
	svc := a.Services()
	info, err := demo.Seed(ctx, a.DB(), cfg, demo.Stores{Users: svc.Users, Clients: svc.Clients, Templates: svc.Templates, Acts: svc.Acts})
	if err != nil {
		return err
	}
	path, err := info.Write(cfg.DataDir)
	if err != nil {
		return err
	}
	if err := a.Start(ctx); err != nil {
		return err
	}
	srv.OnShutdown(a.Stop)
	info.Print(c.stdout, cfg.Addr, path)
	if !dataGiven {
		fmt.Fprintf(c.stdout, "Data directory %s is removed on exit; use --data DIR to keep it.\n", cfg.DataDir)
	}
	return srv.Serve(ctx, a.Handler())
}
