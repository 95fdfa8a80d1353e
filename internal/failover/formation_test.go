package failover_test

import (
	"database/sql"
	"os"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/failover"
)

// EnvFailover switches the failover tests on (CI sets it once it has
// installed the engine): they start a formation and finsvc replicas, kill
// the primary several times and take a minute or two.
const EnvFailover = "FINSVC_TEST_FAILOVER"

// formation starts a monitor and two data nodes in a temp dir, or skips the
// test with the reason it cannot; everything started is killed when the test
// ends, failed or not.
func formation(t *testing.T) *failover.Formation {
	t.Helper()
	if os.Getenv(EnvFailover) != "1" {
		t.Skipf("set %s=1 to run the database failover tests (a pg_auto_failover formation, minutes)", EnvFailover)
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
	db, err := sql.Open("pgx", p.URL(failover.Database))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var names, commit string
	if err := db.QueryRow(`SELECT current_setting('synchronous_standby_names'), current_setting('synchronous_commit')`).Scan(&names, &commit); err != nil {
		t.Fatal(err)
	}
	if names == "" || commit != "on" {
		t.Fatalf("synchronous_standby_names %q, synchronous_commit %q; want a standby and on", names, commit)
	}
	var sync int
	if err := db.QueryRow(`SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')`).Scan(&sync); err != nil || sync != 1 {
		t.Fatalf("%d synchronous standbys (%v); want 1", sync, err)
	}
	t.Logf("primary %s: synchronous_standby_names = %q", p.Name, names)
}
