package testdb

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/db"
)

// TakeDown makes d unreachable mid-test and returns a function that brings
// it back (nil where it cannot come back). PostgreSQL: the database stops
// accepting connections and its sessions are terminated, as in a restart
// or a failover. SQLite: the pool is closed.
func TakeDown(t testing.TB, d *db.DB) (restore func()) {
	t.Helper()
	if d.Dialect == db.SQLite {
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		return nil
	}
	// On the pool itself: a fault hook may call this inside an ambient
	// transaction, which the handles would refuse to leave (db.ErrEscapedTx).
	sqlDB, err := d.DB.DB()
	if err != nil {
		t.Fatal(err)
	}
	var name string
	if err := sqlDB.QueryRow("SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("pgx", DirectURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	ident := `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
	if _, err := admin.Exec(`ALTER DATABASE ` + ident + ` WITH ALLOW_CONNECTIONS false`); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, name); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := admin.Exec(`ALTER DATABASE ` + ident + ` WITH ALLOW_CONNECTIONS true`); err != nil {
			t.Fatal(err)
		}
	}
}

// TerminateCommit waits until a backend of d's database (PostgreSQL) runs
// COMMIT and terminates it: the connection is lost while the COMMIT is
// under way, so its outcome is unknown to the client.
func TerminateCommit(t *testing.T, d *db.DB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var n int64
		err := d.DB.Raw(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active' AND lower(query) = 'commit'`).Scan(&n).Error
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no COMMIT seen")
}
