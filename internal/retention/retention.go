// Package retention deletes what the service no longer needs once it is
// older than the retention period (FINSVC_EVENT_RETENTION): finished
// webhook deliveries, then events left without deliveries, and expired
// fetch requests with their field rows; and, on their own clock, expired
// Idempotency-Key results (kept for idempotency.TTL) and tombstones (kept
// for tombstones.Retention). Pending deliveries
// are never purged, and act history (business data) never is.
package retention

import (
	"context"
	"log/slog"
	"time"

	"github.com/finsvc/finsvc/internal/acts"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/idempotency"
	"github.com/finsvc/finsvc/internal/janitor"
	"github.com/finsvc/finsvc/internal/tombstones"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// Defaults.
const (
	Interval     = 10 * time.Minute
	FirstRun     = 2 * time.Minute
	DefaultBatch = 1000
	// MaxBatchesPerRun bounds one run, so that a first run over years of
	// history does not hold a janitor for hours; the next run goes on.
	MaxBatchesPerRun = 500

	// AnalyzeAfter is how many rows of one table (deliveries or events) a
	// run must delete before it refreshes that table's planner statistics
	// itself (PostgreSQL). Autovacuum analyzes a table only once a tenth of
	// it has changed, and late on a busy server: after a first purge of
	// years of history the planner would still believe in millions of
	// finished rows and could plan the outbox claim (which looks for the few
	// pending ones) by the wrong index until it caught up. ANALYZE samples a
	// fixed 30,000 rows whatever the table's size, so it costs less than
	// the 50 batches such a purge took; below that, the routine runs of a
	// steady state (a few minutes' worth of deliveries) do not move the
	// statistics enough to be worth even that.
	AnalyzeAfter = 50_000
)

// Stats counts what one run deleted.
type Stats struct {
	Deliveries, Events, FetchRequests, IdempotencyKeys, Tombstones, AuditRecords int64
}

// Total is the number of rows deleted.
func (s Stats) Total() int64 {
	return s.Deliveries + s.Events + s.FetchRequests + s.IdempotencyKeys + s.Tombstones + s.AuditRecords
}

// Purger deletes, in batches, rows older than Retention. Every replica may
// run one: on PostgreSQL concurrent batches skip each other's rows (FOR
// UPDATE SKIP LOCKED), and every delete is idempotent.
type Purger struct {
	Retention time.Duration
	// AuditRetention is how long audit records are kept
	// (FINSVC_AUDIT_RETENTION; audit.Purge keeps audit.MinRetention
	// whatever it says). Zero keeps them for audit.DefaultRetention.
	AuditRetention time.Duration
	Batch          int
	Now            func() time.Time
	// AnalyzeAfter is the per-table threshold of deleted rows above which
	// a run ends with ANALYZE of the table (AnalyzeAfter by default; tests
	// lower it).
	AnalyzeAfter int64

	db   *db.DB
	log  *slog.Logger
	loop janitor.Loop
}

// New returns a purger of d's rows older than retention.
func New(d *db.DB, retention time.Duration, log *slog.Logger) *Purger {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Purger{Retention: retention, Batch: DefaultBatch, Now: time.Now, AnalyzeAfter: AnalyzeAfter, db: d, log: log}
	p.loop = janitor.Loop{Interval: Interval, FirstRun: FirstRun, Run: func(ctx context.Context) error {
		_, err := p.RunOnce(ctx)
		return err
	}}
	return p
}

// RunOnce purges everything past the retention now, batch by batch.
func (p *Purger) RunOnce(ctx context.Context) (Stats, error) {
	before := p.Now().Add(-p.Retention)
	var st Stats
	steps := []struct {
		n       *int64
		purge   func(context.Context, *db.DB, time.Time, int) (int64, error)
		analyze string // the table to re-analyze after a large purge
	}{
		// Deliveries first: an event goes only once it has none left.
		{&st.Deliveries, outbox.PurgeDeliveries, "delivery_history"},
		{&st.Events, outbox.PurgeEvents, "events"},
		{&st.FetchRequests, acts.PurgeFetchRequests, ""},
		// Keys expire by their own TTL, not the retention period.
		{&st.IdempotencyKeys, func(ctx context.Context, d *db.DB, _ time.Time, n int) (int64, error) {
			return idempotency.Purge(ctx, d, p.Now(), n)
		}, ""},
		// Tombstones too (tombstones.Retention): a sync needs them for
		// longer than the delivery log.
		{&st.Tombstones, func(ctx context.Context, d *db.DB, _ time.Time, n int) (int64, error) {
			return tombstones.Purge(ctx, d, p.Now().Add(-tombstones.Retention), n)
		}, ""},
		// Audit records, on their own (long) clock.
		{&st.AuditRecords, func(ctx context.Context, d *db.DB, _ time.Time, n int) (int64, error) {
			keep := p.AuditRetention
			if keep == 0 {
				keep = audit.DefaultRetention
			}
			return audit.Purge(ctx, d, p.Now().Add(-keep), n)
		}, ""},
	}
	for _, s := range steps {
		for range MaxBatchesPerRun {
			n, err := s.purge(ctx, p.db, before, p.Batch)
			*s.n += n
			if err != nil {
				if ctx.Err() == nil {
					p.log.Error("retention: purge failed", "error", err, "deleted", st.Total())
				}
				return st, err
			}
			if n < int64(p.Batch) {
				break
			}
		}
	}
	for _, s := range steps {
		if s.analyze != "" && *s.n > 0 && *s.n >= p.AnalyzeAfter {
			p.analyze(ctx, s.analyze, *s.n)
		}
	}
	if st.Total() > 0 {
		p.log.Info("retention: purged", "older_than", before.UTC().Format(time.RFC3339),
			"deliveries", st.Deliveries, "events", st.Events, "fetch_requests", st.FetchRequests,
			"idempotency_keys", st.IdempotencyKeys, "tombstones", st.Tombstones, "audit_records", st.AuditRecords)
	}
	return st, nil
}

// analyze refreshes table's planner statistics on PostgreSQL after a large
// purge (see AnalyzeAfter). A failure is logged, not returned: the rows are
// gone either way, and autovacuum will analyze the table in its own time.
// SQLite: nothing here. Its statistics are kept by the statistics janitor
// (janitor.Statistics, PRAGMA optimize), which re-analyzes a table once its
// size has changed tenfold, a large purge included.
func (p *Purger) analyze(ctx context.Context, table string, deleted int64) {
	if p.db.Dialect != db.Postgres {
		return
	}
	t0 := time.Now()
	if err := p.db.WithContext(ctx).Exec("ANALYZE " + table).Error; err != nil {
		if ctx.Err() == nil {
			p.log.Warn("retention: analyze after purge failed", "table", table, "error", err)
		}
		return
	}
	p.log.Info("retention: analyzed after purge", "table", table, "deleted", deleted, "took", time.Since(t0).Round(time.Millisecond))
}

// Start runs the purge every Interval in the background until Stop.
func (p *Purger) Start(ctx context.Context) { p.loop.Start(ctx) }

// Stop ends the background purge and waits for a run in progress.
func (p *Purger) Stop() { p.loop.Stop() }
