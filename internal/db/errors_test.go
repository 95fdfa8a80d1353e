package db_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
)

// TestIsUnavailable classifies real failures of both dialects: an outage
// (nothing listening, the pool closed, the server shutting down) against a
// statement's own failure (no row, duplicate key, bad SQL).
func TestIsUnavailable(t *testing.T) {
	// Nothing listens on port 1: the connect error of a server that is down.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := db.Open(ctx, "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=2", "", testdb.Logger()); !db.IsUnavailable(err) {
		t.Errorf("connection refused: IsUnavailable(%v) = false", err)
	}
	for _, code := range []string{"57P01", "57P03", "08006", "53300"} {
		if err := fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code}); !db.IsUnavailable(err) {
			t.Errorf("SQLSTATE %s: not unavailable", code)
		}
	}
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		var n int
		for name, err := range map[string]error{
			"no row":    d.DB.Table("tenants").Where("id = ?", -1).Take(&map[string]any{}).Error,
			"duplicate": d.DB.Exec("INSERT INTO tenants (id, slug, name, created_at) VALUES (1, 'ab', 'a', CURRENT_TIMESTAMP), (1, 'ab', 'a', CURRENT_TIMESTAMP)").Error,
			"bad SQL":   d.DB.Raw("SELECT nope FROM nowhere").Scan(&n).Error,
		} {
			if err == nil {
				t.Fatalf("%s: no error", name)
			}
			if name == "duplicate" && !db.IsUniqueViolation(err) {
				t.Fatalf("duplicate: %v", err)
			}
			if db.IsUnavailable(err) {
				t.Errorf("%s: IsUnavailable(%v) = true", name, err)
			}
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		err := d.DB.Raw("SELECT 1").Scan(&n).Error
		if err == nil || errors.Is(err, gorm.ErrRecordNotFound) || !db.IsUnavailable(err) {
			t.Errorf("closed pool: IsUnavailable(%v) = false", err)
		}
	})
	if db.IsUnavailable(nil) {
		t.Error("IsUnavailable(nil) = true")
	}
}
