package db

import "context"

// Replication is what the primary knows of its standbys
// (pg_stat_replication): how many are synchronous right now (sync_state
// 'sync' or 'quorum'; 0 when none is configured, connected or confirmed)
// and the longest replay lag among them, in seconds (0 when caught up).
// Reading every column needs the pg_monitor role (or a superuser): for
// another role PostgreSQL hides sync_state and the lags.
type Replication struct {
	SyncStandbys int
	LagSeconds   float64
}

// ReadReplication reads Replication on PostgreSQL; ok is false on SQLite,
// which has no replication.
func (d *DB) ReadReplication(ctx context.Context) (r Replication, ok bool, err error) {
	if d.Dialect != Postgres {
		return Replication{}, false, nil
	}
	// replay_lag is NULL once a standby has replayed everything and the
	// primary is idle: caught up.
	err = d.WithContext(ctx).Raw(`SELECT
		count(*) FILTER (WHERE sync_state IN ('sync', 'quorum')) AS sync_standbys,
		coalesce(max(extract(epoch FROM replay_lag)), 0)::float8 AS lag_seconds
		FROM pg_stat_replication`).Row().Scan(&r.SyncStandbys, &r.LagSeconds)
	if err != nil {
		return Replication{}, false, err
	}
	return r, true, nil
}
