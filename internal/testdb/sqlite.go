package testdb

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/db"
)

// SQLite returns a fresh migrated SQLite database in t's temp dir.
func SQLite(t testing.TB) *db.DB {
	t.Helper()
	skipUnlessEnabled(t, db.SQLite)
	tmpl, err := sqliteTemplate()
	if err != nil {
		t.Fatalf("testdb: sqlite template: %v", err)
	}
	dir := t.TempDir()
	if err := copyFile(tmpl, filepath.Join(dir, db.SQLiteFile)); err != nil {
		t.Fatalf("testdb: copy sqlite template: %v", err)
	}
	ctx, cancel := ctxTimeout(30 * time.Second)
	defer cancel()
	d, err := db.Open(ctx, "", dir, Logger())
	if err != nil {
		t.Fatalf("testdb: open sqlite: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	failEscapes(t, d)
	return d
}

// sqliteTemplate returns the path of a migrated database file for the
// current migrations, building it once. The file lives in the system temp
// dir under a name derived from the migrations hash, so concurrent package
// processes share it; it is built under a unique name and renamed into
// place, which is atomic.
var sqliteTemplate = sync.OnceValues(func() (string, error) {
	final := filepath.Join(os.TempDir(), fmt.Sprintf("finsvc-testdb-%s.sqlite", migrationsHash()))
	if _, err := os.Stat(final); err == nil {
		return final, nil
	}
	build := final + ".build-" + randomSuffix()
	snapshot := build + ".snapshot"
	defer os.Remove(build)
	defer os.Remove(build + "-wal")
	defer os.Remove(build + "-shm")
	defer os.Remove(snapshot)

	ctx, cancel := ctxTimeout(2 * time.Minute)
	defer cancel()
	d, err := db.Open(ctx, "sqlite:"+build, "", Logger())
	if err != nil {
		return "", err
	}
	defer d.Close()
	if err := d.Migrate(ctx); err != nil {
		return "", err
	}
	// VACUUM INTO writes a consistent single-file snapshot (no WAL to carry
	// along); each copy re-enables WAL when opened.
	if err := d.WithContext(ctx).Exec("VACUUM INTO ?", snapshot).Error; err != nil {
		return "", fmt.Errorf("snapshot: %w", err)
	}
	if err := os.Rename(snapshot, final); err != nil {
		return "", err
	}
	return final, nil
})

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
