package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tracing/suppress"
)

// replication serves what the primary a replica is connected to knows of
// its standbys (db.ReadReplication), cached for ttl like the outbox gauges:
//
//   - finsvc_db_sync_standbys: synchronous standbys confirming commits right
//     now; 0 means a commit is acknowledged on the primary alone (for
//     example just after a failover, until the old primary rejoins);
//   - finsvc_db_replication_lag_seconds: the longest replay lag among the
//     standbys.
//
// On SQLite, or when the query fails (a role without pg_monitor sees no
// sync_state, a replica between primaries), the gauges are absent.
type replication struct {
	db   *db.DB
	ttl  time.Duration
	sync *prometheus.Desc
	lag  *prometheus.Desc

	mu sync.Mutex
	at time.Time
	r  db.Replication
	ok bool
}

func newReplication(d *db.DB, ttl time.Duration) *replication {
	return &replication{
		db: d, ttl: ttl,
		sync: prometheus.NewDesc("finsvc_db_sync_standbys",
			"Synchronous standbys of the database primary confirming commits now (pg_stat_replication; cached a few seconds).", nil, nil),
		lag: prometheus.NewDesc("finsvc_db_replication_lag_seconds",
			"Longest replay lag of the database primary's standbys, in seconds (0 when caught up).", nil, nil),
	}
}

func (r *replication) Describe(ch chan<- *prometheus.Desc) {
	ch <- r.sync
	ch <- r.lag
}

func (r *replication) Collect(ch chan<- prometheus.Metric) {
	if v, ok := r.read(); ok {
		ch <- prometheus.MustNewConstMetric(r.sync, prometheus.GaugeValue, float64(v.SyncStandbys))
		ch <- prometheus.MustNewConstMetric(r.lag, prometheus.GaugeValue, v.LagSeconds)
	}
}

func (r *replication) read() (db.Replication, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.at.IsZero() && time.Since(r.at) < r.ttl {
		return r.r, r.ok
	}
	ctx, cancel := context.WithTimeout(suppress.Context(context.Background()), 2*time.Second)
	defer cancel()
	v, ok, err := r.db.ReadReplication(ctx)
	r.at, r.r, r.ok = time.Now(), v, ok && err == nil
	return r.r, r.ok
}
