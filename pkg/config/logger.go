package config

import (
	"io"
	"log/slog"
)

// NewLogger builds the service's structured logger per LogFormat and
// LogLevel (JSON for production log pipelines, text for a terminal).
func (c *Config) NewLogger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.LogLevel}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
