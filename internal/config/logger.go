package config

import (
	"io"
	"log/slog"

	"github.com/finsvc/finsvc/internal/jsonlog"
)

// NewLogger builds the service's structured logger per LogFormat and
// LogLevel (JSON for production log pipelines, text for a terminal). The
// JSON lines are slog.JSONHandler's, written by jsonlog: every request
// writes one.
func (c *Config) NewLogger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.LogLevel}
	if c.LogFormat == "json" {
		return slog.New(jsonlog.New(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
