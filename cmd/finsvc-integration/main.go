// Command finsvc-integration is the reference integration: it receives
// act.fetch_data deliveries, verifies their signature, answers 202 at once
// and writes values for the external fields back in one bulk call.
//
//	finsvc-integration --listen :9090 \
//	  --finsvc http://127.0.0.1:8080 --host demo.localhost \
//	  --token "$ACCESS_TOKEN" --secret "$WEBHOOK_SECRET"
//
// Token and secret are better given as FINSVC_INTEGRATION_TOKEN and
// FINSVC_INTEGRATION_WEBHOOK_SECRET (flags show up in ps). Several secrets
// may be given comma-separated while a rotation is in progress.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/finsvc/finsvc/internal/integration"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "finsvc-integration:", err)
		os.Exit(1)
	}
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("finsvc-integration", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", env("FINSVC_INTEGRATION_LISTEN", ":9090"), "address to receive webhooks on (env FINSVC_INTEGRATION_LISTEN)")
	base := fs.String("finsvc", env("FINSVC_INTEGRATION_BASE_URL", ""), "finsvc base URL, e.g. https://acme.finsvc.example (env FINSVC_INTEGRATION_BASE_URL)")
	host := fs.String("host", env("FINSVC_INTEGRATION_HOST", ""), "tenant host to send, when --finsvc is an address, e.g. demo.localhost (env FINSVC_INTEGRATION_HOST)")
	token := fs.String("token", env("FINSVC_INTEGRATION_TOKEN", ""), "OAuth access token with acts:write (env FINSVC_INTEGRATION_TOKEN)")
	secret := fs.String("secret", env("FINSVC_INTEGRATION_WEBHOOK_SECRET", ""), "webhook secret(s), comma-separated (env FINSVC_INTEGRATION_WEBHOOK_SECRET)")
	certFile := fs.String("tls-cert", env("FINSVC_INTEGRATION_TLS_CERT", ""), "serve HTTPS with this certificate (env FINSVC_INTEGRATION_TLS_CERT)")
	keyFile := fs.String("tls-key", env("FINSVC_INTEGRATION_TLS_KEY", ""), "… and this key (env FINSVC_INTEGRATION_TLS_KEY)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if (*certFile == "") != (*keyFile == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	var secrets []string
	for _, s := range strings.Split(*secret, ",") {
		if s = strings.TrimSpace(s); s != "" {
			secrets = append(secrets, s)
		}
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	rcv, err := integration.New(integration.Config{
		Secrets: secrets, BaseURL: *base, Host: *host, Token: *token, Logger: logger,
	})
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: *listen, Handler: rcv, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() {
		logger.Info("receiving webhooks", "addr", *listen, "finsvc", *base)
		if *certFile != "" {
			errc <- srv.ListenAndServeTLS(*certFile, *keyFile)
		} else {
			errc <- srv.ListenAndServe()
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	rcv.Close(sctx)
	return nil
}
