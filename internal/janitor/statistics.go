package janitor

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/finsvc/finsvc/internal/db"
)

// Statistics defaults. The check is cheap (a look at each table's size when
// nothing needs analyzing), so it runs as often as the other janitors: a
// tenant imported in bulk is planned with statistics within minutes.
const (
	StatisticsInterval = 10 * time.Minute
	StatisticsFirstRun = 10 * time.Minute // db.Open has just refreshed them
)

// Statistics keeps the query planner's statistics of an SQLite database
// current as its tables grow or shrink: every Interval it runs db.Optimize
// (PRAGMA optimize), as SQLite recommends for long-lived connections. On
// PostgreSQL it does nothing and Start starts no loop: autovacuum analyzes
// there. Every replica may run one; a refresh is idempotent.
type Statistics struct {
	// Interval between runs, FirstRun the delay before the first one.
	Interval, FirstRun time.Duration
	// Ran, when set, is called after each background run (tests).
	Ran func(error)

	db      *db.DB
	log     *slog.Logger
	mu      sync.Mutex
	started bool // loop has its schedule (set once: the loop reads it)
	loop    Loop
}

// NewStatistics returns a statistics janitor over d with the default
// schedule; adjust the fields before Start.
func NewStatistics(d *db.DB, log *slog.Logger) *Statistics {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Statistics{Interval: StatisticsInterval, FirstRun: StatisticsFirstRun, db: d, log: log}
}

// RunOnce refreshes the statistics now (db.Optimize). A refresh that
// analyzed something large enough to notice is logged with its duration:
// ANALYZE holds SQLite's write lock while it runs.
func (s *Statistics) RunOnce(ctx context.Context) error {
	if s.db.Dialect != db.SQLite {
		return nil
	}
	t0 := time.Now()
	if err := s.db.Optimize(ctx); err != nil {
		if ctx.Err() == nil {
			s.log.Error("janitor: sqlite statistics refresh failed", "error", err)
		}
		return err
	}
	if took := time.Since(t0); took > 100*time.Millisecond {
		s.log.Info("janitor: sqlite statistics refreshed", "took", took.Round(time.Millisecond))
	}
	return nil
}

// Start runs the refresh every Interval in the background until Stop (or
// ctx ends); on PostgreSQL it does nothing. Calling it again while running
// does nothing.
func (s *Statistics) Start(ctx context.Context) {
	if s.db.Dialect != db.SQLite {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		s.loop.Interval, s.loop.FirstRun, s.loop.Ran = s.Interval, s.FirstRun, s.Ran
		s.loop.Run = s.RunOnce
		s.started = true
	}
	s.loop.Start(ctx)
}

// Stop ends the background refresh, cancelling one in progress, and waits
// for it. It is safe to call more than once and without Start.
func (s *Statistics) Stop() { s.loop.Stop() }
