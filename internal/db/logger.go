package db

import (
	"context"
	"log/slog"
	"time"

	gormlogger "gorm.io/gorm/logger"
)

// gormLogger reports slow statements only, and only as parameterized SQL:
// bound values can be password hashes, token signatures or client secrets.
// Failed statements are not logged here: the caller gets the error, wraps it
// with context and decides whether it is worth a log line (a unique
// violation on a duplicate slug is ordinary input, not an incident).
type gormLogger struct {
	log  *slog.Logger
	slow time.Duration
}

func newGormLogger(l *slog.Logger, slow time.Duration) gormlogger.Interface {
	return &gormLogger{log: l.With("component", "db"), slow: slow}
}

func (l *gormLogger) LogMode(gormlogger.LogLevel) gormlogger.Interface { return l }

func (l *gormLogger) Info(ctx context.Context, msg string, _ ...any) {
	l.log.DebugContext(ctx, msg)
}

func (l *gormLogger) Warn(ctx context.Context, msg string, _ ...any) {
	l.log.WarnContext(ctx, msg)
}

// Error is debug only: gorm reports here errors it also returns (a failed
// connection at Open, say), and the caller's wrapped error is the one line
// an operator should see.
func (l *gormLogger) Error(ctx context.Context, msg string, _ ...any) {
	l.log.DebugContext(ctx, msg)
}

func (l *gormLogger) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), _ error) {
	if l.slow <= 0 {
		return
	}
	if elapsed := time.Since(begin); elapsed > l.slow {
		sql, rows := fc()
		l.log.WarnContext(ctx, "slow query", "elapsed", elapsed, "rows", rows, "sql", sql)
	}
}

// ParamsFilter drops bound values, so that fc() in Trace yields SQL with
// placeholders only.
func (l *gormLogger) ParamsFilter(_ context.Context, sql string, _ ...any) (string, []any) {
	return sql, nil
}
