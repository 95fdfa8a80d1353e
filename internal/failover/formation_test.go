package failover_test

import (
	"fmt"
	"os"
	"strings"
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

// formation starts a monitor and failover.DataNodes data nodes in a temp dir, or skips the
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
	f, err := failover.Start(t.Context(), t.TempDir(), failover.DataNodes, t.Logf)
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
	t.Logf("formation (monitor and %d data nodes) created in %v", len(f.Nodes), time.Since(start).Round(10*time.Millisecond))
	return f
}

// synchronous waits (up to 10 s) until the formation's primary replicates
// synchronously to every standby: synchronous_standby_names is
// 'ANY failover.NumberSyncStandbys (…)', synchronous_commit is on and the
// service's replication gauge (db.ReadReplication, finsvc_db_sync_standbys)
// counts every standby as synchronous (quorum). Every fault starts from there, so that "0 lost" is a claim about
// synchronous replication.
func synchronous(t *testing.T, f *failover.Formation) {
	t.Helper()
	p, err := f.Primary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	d, err := db.Open(t.Context(), p.URL(failover.Database), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var names, commit string
		err := d.Raw(`SELECT current_setting('synchronous_standby_names'), current_setting('synchronous_commit')`).Row().Scan(&names, &commit)
		r, ok, rerr := d.ReadReplication(t.Context())
		if err == nil && rerr == nil && ok && strings.HasPrefix(names, fmt.Sprintf("ANY %d (", failover.NumberSyncStandbys)) &&
			commit == "on" && r.SyncStandbys == len(f.Nodes)-1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("primary %s: synchronous_standby_names %q, synchronous_commit %q (%v); ReadReplication %+v, %v, %v; want a synchronous standby",
				p.Name, names, commit, err, r, ok, rerr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
