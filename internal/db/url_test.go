package db

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		url, dataDir     string
		dialect, target  string
		wantErrSubstring string
	}{
		{url: "", dataDir: "/data", dialect: SQLite, target: filepath.Join("/data", "finsvc.db")},
		{url: "  ", dataDir: "d", dialect: SQLite, target: filepath.Join("d", "finsvc.db")},
		{url: "", dataDir: "", wantErrSubstring: "neither"},
		{url: "postgres://u@h:5432/db?sslmode=disable", dialect: Postgres, target: "postgres://u@h:5432/db?sslmode=disable"},
		{url: "postgresql://h/db", dialect: Postgres, target: "postgresql://h/db"},
		{url: "host=h dbname=x", dialect: Postgres, target: "host=h dbname=x"},
		{url: "sqlite:///abs/x.db", dialect: SQLite, target: "/abs/x.db"},
		{url: "sqlite:rel/x.db", dialect: SQLite, target: "rel/x.db"},
		{url: "file:x.db", dialect: SQLite, target: "x.db"},
		{url: "sqlite:x.db?_pragma=foo", wantErrSubstring: "invalid sqlite path"},
		{url: "sqlite:", wantErrSubstring: "invalid sqlite path"},
		{url: "mysql://h/db", wantErrSubstring: `unsupported database URL scheme "mysql"`},
	}
	for _, tt := range tests {
		dialect, target, err := parseURL(tt.url, tt.dataDir)
		if tt.wantErrSubstring != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErrSubstring) {
				t.Errorf("parseURL(%q, %q) error = %v, want containing %q", tt.url, tt.dataDir, err, tt.wantErrSubstring)
			}
			continue
		}
		if err != nil || dialect != tt.dialect || target != tt.target {
			t.Errorf("parseURL(%q, %q) = %q, %q, %v; want %q, %q", tt.url, tt.dataDir, dialect, target, err, tt.dialect, tt.target)
		}
	}
}

func TestSQLiteDSN(t *testing.T) {
	dsn := SQLiteDSN("/tmp/x.db")
	for _, want := range []string{"_txlock=immediate", "busy_timeout%285000%29", "journal_mode%28WAL%29", "foreign_keys%281%29"} {
		if !strings.Contains(dsn, want) {
			t.Errorf("SQLiteDSN = %q, missing %q", dsn, want)
		}
	}
	// The driver stops reading parameters after _time_format (see SQLiteDSN).
	if strings.Contains(dsn, "_time_format") {
		t.Errorf("SQLiteDSN = %q must not set _time_format", dsn)
	}
}

// Pooled connections send queries without named prepared statements unless
// the URL asks for a caching mode; direct ones keep pgx's statement cache.
func TestWithQueryExecMode(t *testing.T) {
	cases := []struct {
		in     string
		pooled bool
		want   string
		cached bool
	}{
		{"postgres://u@h/db?sslmode=disable", true, "postgres://u@h/db?default_query_exec_mode=exec&sslmode=disable", false},
		{"postgres://u@h/db?sslmode=disable", false, "postgres://u@h/db?sslmode=disable", true},
		{"postgres://u@h/db?default_query_exec_mode=cache_statement", true, "postgres://u@h/db?default_query_exec_mode=cache_statement", true},
		{"postgres://u@h/db?default_query_exec_mode=exec", false, "postgres://u@h/db?default_query_exec_mode=exec", false},
		{"postgres://u@h/db?default_query_exec_mode=describe_exec", true, "postgres://u@h/db?default_query_exec_mode=describe_exec", false},
		{"host=h dbname=db", true, "host=h dbname=db default_query_exec_mode=exec", false},
		{"host=h dbname=db", false, "host=h dbname=db", true},
		{"host=h default_query_exec_mode=cache_describe", true, "host=h default_query_exec_mode=cache_describe", true},
	}
	for _, c := range cases {
		got, cached := withQueryExecMode(c.in, c.pooled)
		if got != c.want || cached != c.cached {
			t.Errorf("withQueryExecMode(%q, pooled %v) = %q, %v; want %q, %v", c.in, c.pooled, got, cached, c.want, c.cached)
		}
	}
}
