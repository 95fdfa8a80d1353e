package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"testing"
	"time"
)

// A test database's name carries its creation time, which is what lets a
// later process drop the ones left behind (made ahead and never taken, or
// queued for dropping when the process exited), and only those.
func TestLeftoverNames(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for name, want := range map[string]bool{
		"finsvc_test_1799990000_0a1b2c3d4e5f":              true, // 2 h 46 min old
		"finsvc_test_1799990000_0000abcd_0a1b2c3d4e5f_ci1": true,
		"finsvc_test_1799999000_0000abcd_0a1b2c3d4e5f":     false,
		"finsvc_test_1799999000_0a1b2c3d4e5f":              false, // 16 min old
		"finsvc_test_0a1b2c3d4e5f":                         false, // an older naming: not ours to judge
		"finsvc_tmpl_84d2ea04206bfcdb":                     false,
		"test":                                             false,
	} {
		created, ok := createdAt(name)
		if got := ok && now.Sub(created) > leftoverAge; got != want {
			t.Errorf("%s: left over %v, want %v", name, got, want)
		}
	}
}

// Databases made ahead are distinct, cloned from the template (migrated),
// and dropped behind once their test ends.
func TestPostgresDatabasesAheadAndBehind(t *testing.T) {
	if os.Getenv(EnvDatabaseURL) == "" {
		t.Skip("no PostgreSQL")
	}
	var names []string
	for i := 0; i < 3; i++ {
		t.Run("db", func(t *testing.T) {
			d := Postgres(t)
			var name string
			var n int64
			if err := d.Raw("SELECT current_database()").Scan(&name).Error; err != nil {
				t.Fatal(err)
			}
			if err := d.Raw("SELECT count(*) FROM tenants").Scan(&n).Error; err != nil {
				t.Fatalf("not migrated: %v", err)
			}
			names = append(names, name)
		})
	}
	if names[0] == names[1] || names[1] == names[2] || names[0] == names[2] {
		t.Fatalf("a database handed out twice: %v", names)
	}
	admin, err := adminDB(DirectURL())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var left int
		if err := admin.QueryRow(`SELECT count(*) FROM pg_database WHERE datname = ANY($1)`, names).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %v still there a minute after their tests ended", left, names)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The owner number in a name is read back; names of the older shape have
// none.
func TestOwnerOfName(t *testing.T) {
	for name, want := range map[string]int32{
		"finsvc_test_1799999000_0000abcd_0a1b2c3d4e5f":     0xabcd,
		"finsvc_test_1799999000_ffffffff_0a1b2c3d4e5f_ci1": -1,
		"finsvc_test_1799999000_0a1b2c3d4e5f":              0,
		"finsvc_tmpl_84d2ea04206bfcdb":                     0,
	} {
		got, ok := ownerOf(name)
		if ok != (want != 0) || got != want {
			t.Errorf("ownerOf(%s) = %d, %v; want %d", name, got, ok, want)
		}
	}
	name, err := databaseName(time.Unix(1_800_000_000, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := ownerOf(name); !ok || got != processOwner() {
		t.Errorf("databaseName = %s: owner %d, %v; want this process's, %d", name, got, ok, processOwner())
	}
}

// A database whose owner's lock nobody holds (its process exited) is
// dropped by the next process at once; one whose owner lives is kept,
// even when the owner's session is on another database of the server.
func TestLeftoversOfExitedProcessesDropped(t *testing.T) {
	if os.Getenv(EnvDatabaseURL) == "" {
		t.Skip("no PostgreSQL")
	}
	skipUnlessEnabled(t, "postgres")
	ctx := t.Context()
	admin, err := adminDB(DirectURL())
	if err != nil {
		t.Fatal(err)
	}
	// A live owner: a session on the server's "postgres" database holds
	// its lock, as another process's admin session would.
	live := processOwner() ^ 0x5a5a5a5a
	other, err := withDatabase(DirectURL(), "postgres")
	if err != nil {
		t.Fatal(err)
	}
	od, err := sql.Open("pgx", other)
	if err != nil {
		t.Fatal(err)
	}
	defer od.Close()
	oc, err := od.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	if _, err := oc.ExecContext(ctx, `SELECT pg_advisory_lock($1, $2)`, ownerLockClass, live); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	dead := live ^ 0x0f0f0f0f
	names := map[string]bool{ // name: should be dropped
		fmt.Sprintf("%s%d_%08x_%s", testDBPrefix, now.Unix(), uint32(dead), randomSuffix()):           true,
		fmt.Sprintf("%s%d_%08x_%s", testDBPrefix, now.Unix(), uint32(live), randomSuffix()):           false,
		fmt.Sprintf("%s%d_%08x_%s", testDBPrefix, now.Unix(), uint32(processOwner()), randomSuffix()): false,
	}
	for name := range names {
		if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+quoteIdent(name)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = admin.ExecContext(context.Background(), `DROP DATABASE IF EXISTS `+quoteIdent(name)+` WITH (FORCE)`)
		})
	}
	dropLeftovers(ctx, admin, now)
	for name, dropped := range names {
		var exists bool
		if err := admin.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		if exists == dropped {
			t.Errorf("%s: exists %v after dropLeftovers; want dropped %v", name, exists, dropped)
		}
	}
}
