package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
)

// The replication gauges come from PostgreSQL's pg_stat_replication (the
// test server has no standby: 0 synchronous, no lag) and are absent on
// SQLite, which has no replication. internal/failover checks them against
// a primary with a synchronous standby.
func TestReplicationGauges(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		r := newReplication(d, time.Second)
		reg := prometheus.NewRegistry()
		reg.MustRegister(r)
		n, err := testutil.GatherAndCount(reg, "finsvc_db_sync_standbys", "finsvc_db_replication_lag_seconds")
		if err != nil {
			t.Fatal(err)
		}
		if d.Dialect == db.SQLite {
			if n != 0 {
				t.Fatalf("%d replication series on SQLite; want none", n)
			}
			return
		}
		if n != 2 {
			t.Fatalf("%d replication series on PostgreSQL; want 2", n)
		}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if v := mf.GetMetric()[0].GetGauge().GetValue(); v != 0 {
				t.Fatalf("%s = %v on a server without standbys; want 0", mf.GetName(), v)
			}
		}
	})
}
