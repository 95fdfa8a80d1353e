package testdb

import (
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
		"finsvc_test_1799990000_0a1b2c3d4e5f": true,  // 2 h 46 min old
		"finsvc_test_1799999000_0a1b2c3d4e5f": false, // 16 min old
		"finsvc_test_0a1b2c3d4e5f":            false, // an older naming: not ours to judge
		"finsvc_tmpl_84d2ea04206bfcdb":        false,
		"test":                                false,
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
