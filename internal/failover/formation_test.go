package failover_test

import (
	"database/sql"
	"os"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/failover"
)

// EnvFailover switches the failover tests on ("1") or off ("0"): they
// start a formation and finsvc replicas, kill the primary several times and
// take minutes. Unset, they run under CI=true (.ci/run installs the engine)
// and are skipped elsewhere, so that a plain `go test ./...` stays fast.
const EnvFailover = "FINSVC_TEST_FAILOVER"

func enabled() bool {
	switch os.Getenv(EnvFailover) {
	case "1":
		return true
	case "":
		return os.Getenv("CI") == "true"
	}
	return false
}

// formation starts a monitor and two data nodes in a temp dir, or skips the
// test with the reason it cannot; everything started is killed when the test
// ends, failed or not.
func formation(t *testing.T) *failover.Formation {
	t.Helper()
	if !enabled() {
		t.Skipf("set %s=1 (or CI=true) to run the database failover tests (a pg_auto_failover formation, minutes)", EnvFailover)
	}
	if err := failover.Available(); err != nil {
		t.Skipf("no pg_auto_failover formation here: %v", err)
	}
	start := time.Now()
	f, err := failover.Start(t.Context(), t.TempDir(), 2, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range append(f.Nodes, f.Monitor) {
				t.Logf("%s log (tail):\n%s", n.Name, n.Tail())
			}
		}
		f.Close()
	})
	t.Logf("formation (monitor and 2 data nodes) created in %v", time.Since(start).Round(10*time.Millisecond))
	return f
}

// The formation replicates synchronously: its primary waits for the
// standby on every commit.
func TestFormationIsSynchronous(t *testing.T) {
	f := formation(t)
	p, err := f.Primary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := sql.Open("pgx", p.URL(failover.Database))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var names, commit string
	if err := conn.QueryRow(`SELECT current_setting('synchronous_standby_names'), current_setting('synchronous_commit')`).Scan(&names, &commit); err != nil {
		t.Fatal(err)
	}
	if names == "" || commit != "on" {
		t.Fatalf("synchronous_standby_names %q, synchronous_commit %q; want a standby and on", names, commit)
	}
	var sync int
	if err := conn.QueryRow(`SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')`).Scan(&sync); err != nil || sync != 1 {
		t.Fatalf("%d synchronous standbys (%v); want 1", sync, err)
	}
	t.Logf("primary %s: synchronous_standby_names = %q", p.Name, names)

	// The service's replication gauges read the same from the primary
	// (finsvc_db_sync_standbys, internal/metrics).
	d, err := db.Open(t.Context(), p.URL(failover.Database), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r, ok, err := d.ReadReplication(t.Context())
	if err != nil || !ok || r.SyncStandbys != 1 {
		t.Fatalf("ReadReplication = %+v, %v, %v; want 1 synchronous standby", r, ok, err)
	}
}
