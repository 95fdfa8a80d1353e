package db

import (
	"context"
	"time"

	"gorm.io/gorm"
)

// optimizeOnOpenTimeout bounds the statistics refresh Open runs on SQLite.
// PRAGMA optimize analyzes with a sample of its own (analysis_limit), so on
// a file of gigabytes it takes a fraction of a second; the bound is there
// for a write lock held by someone else.
const optimizeOnOpenTimeout = 30 * time.Second

// sqliteOptimize is SQLite's statistics refresh as its documentation
// recommends it for long-lived connections (https://sqlite.org/pragma.html#pragma_optimize),
// with the mask 0x10002: 0x02 runs ANALYZE on the tables that need it and
// 0x10000 checks every table, not only those this connection has queried
// (the pool hands the pragma to any of its connections). A table needs it
// when it has rows and was never analyzed, or when its size has changed
// tenfold since it was; the others cost a look at their size. Measured on
// the embedded SQLite 3.54: a table never analyzed is analyzed, an empty
// one is left for a later run.
const sqliteOptimize = "PRAGMA optimize=0x10002"

// sqliteAnalysisLimit bounds the ANALYZE that PRAGMA optimize runs to about
// a thousand rows of each index. Without it the embedded SQLite read every
// row: 44 s with the write lock held on the benchmark's 3 GB file (1M
// clients, 10M data points; BENCHMARKS.md, "SQLite"), the documented
// automatic limit notwithstanding.
const sqliteAnalysisLimit = "PRAGMA analysis_limit=1000"

// Optimize refreshes the query planner's statistics where they are missing
// or stale. On SQLite that is PRAGMA optimize (sqliteOptimize): without
// statistics (sqlite_stat1) SQLite plans by fixed guesses, and as a tenant
// grows some of those are scans that grow with it (the acts lists by
// status and by client, the bulk PUT's reads: 343 ms, 30 ms and 475 ms in
// BENCHMARKS.md, "SQLite"). ANALYZE writes sqlite_stat1, so it takes the
// write lock for as long as it runs, bounded as above. Open runs it once;
// the janitor (internal/janitor, Statistics) every few minutes after. On
// PostgreSQL nothing: autovacuum analyzes tables as they change.
func (d *DB) Optimize(ctx context.Context) error {
	if d.Dialect != SQLite {
		return nil
	}
	// analysis_limit is the connection's: set it on the one that runs the
	// pragma. It stays set there; the service runs no other ANALYZE.
	return d.WithContext(ctx).Connection(func(c *gorm.DB) error {
		if err := c.Exec(sqliteAnalysisLimit).Error; err != nil {
			return err
		}
		return c.Exec(sqliteOptimize).Error
	})
}

// optimizeOnOpen runs Optimize once for a freshly opened SQLite database,
// as SQLite recommends when a connection is opened: a restarted service
// plans with statistics from its first request instead of after the
// janitor's first run. Statistics live in the file (sqlite_stat1) and every
// connection of the pool reads them, so once per Open is enough; the pragma
// does not belong in SQLiteDSN's per-connection list. A failure is logged,
// not returned: the service works without statistics, only slower.
func (d *DB) optimizeOnOpen(ctx context.Context) {
	if d.Dialect != SQLite {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, optimizeOnOpenTimeout)
	defer cancel()
	t0 := time.Now()
	if err := d.Optimize(ctx); err != nil {
		d.logger().Warn("db: sqlite statistics refresh on open failed", "error", err)
		return
	}
	if took := time.Since(t0); took > time.Second {
		d.logger().Info("db: sqlite statistics refreshed on open", "took", took.Round(time.Millisecond))
	}
}
