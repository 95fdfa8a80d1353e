package db

import (
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Stamp returns the updated_at to write for a change to one of the
// tenant's rows of list (its id_sequences row is "<list>.changed"): now, or
// one microsecond past the list's previous stamp when the clock has not
// moved past it. Stamps of one tenant's list are therefore unique and, on
// both dialects, follow commit order: the sequence row stays locked until
// the caller commits (PostgreSQL; SQLite has one writer at a time), so a
// writer that takes a later stamp cannot commit before an earlier one.
// That is what lets an incremental sync (updated_since, README
// "Incremental sync") resume after the last updated_at it has seen without
// missing a row committed late with an earlier time.
//
// Take the stamp late in the transaction (just before the write), since
// writers of the tenant's list wait on it until commit, and before any
// statement whose triggers take list_counts rows, so that locks are always
// taken in the same order (ARCHITECTURE.md, Lists at scale).
func Stamp(tx *gorm.DB, tenantID int64, list string, now time.Time) (time.Time, error) {
	micros := now.UTC().Truncate(time.Microsecond).UnixMicro()
	var got int64
	err := tx.Raw(`INSERT INTO id_sequences (tenant_id, name, next_id) VALUES (?, ?, ?)
ON CONFLICT (tenant_id, name) DO UPDATE SET next_id = CASE
  WHEN id_sequences.next_id + 1 > EXCLUDED.next_id THEN id_sequences.next_id + 1 ELSE EXCLUDED.next_id END
RETURNING next_id`, tenantID, list+".changed", micros).Scan(&got).Error
	if err != nil {
		return time.Time{}, fmt.Errorf("db.Stamp(tenant %d, %q): %w", tenantID, list, err)
	}
	return time.UnixMicro(got).UTC(), nil
}
