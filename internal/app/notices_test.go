package app_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/config"
)

// Without FINSVC_SMTP_URL the App says once, at start-up, that no failure
// notice is sent by email; with an URL it cannot read it refuses to start.
func TestNoticesNeedSMTP(t *testing.T) {
	var buf bytes.Buffer
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	a, err := app.New(cfg, app.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	if n := strings.Count(buf.String(), "FINSVC_SMTP_URL is not set"); n != 1 {
		t.Fatalf("the log says it %d times:\n%s", n, buf.String())
	}
	cfg = config.Default()
	cfg.DataDir = t.TempDir()
	cfg.SMTPURL = "http://mail.example.com"
	if a, err := app.New(cfg, app.WithLogger(slog.New(slog.DiscardHandler))); err == nil {
		a.Close()
		t.Fatal("an http:// SMTP URL was accepted")
	}
}
