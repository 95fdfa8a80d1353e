package db

import (
	"fmt"

	"gorm.io/gorm"
)

// NextIDs allocates n consecutive ids of the per-tenant sequence seq
// ("clients", "acts", "data_points", …) and returns the first; the ids are
// first, first+1, …, first+n-1. Ids start at 1 in every tenant, so two
// tenants hold rows with the same numeric ids (ARCHITECTURE.md, Tenancy).
//
// It is one upsert: the row lock it takes (PostgreSQL) or the write lock
// (SQLite) serializes concurrent allocations, and when tx is a transaction
// that rolls back, the allocation rolls back with it.
func NextIDs(tx *gorm.DB, tenantID int64, seq string, n int) (first int64, err error) {
	if n < 1 {
		return 0, fmt.Errorf("db.NextIDs(%q): n = %d, want ≥ 1", seq, n)
	}
	if tenantID <= 0 || seq == "" {
		return 0, fmt.Errorf("db.NextIDs: invalid tenant %d or sequence %q", tenantID, seq)
	}
	// next_id is the next free id. A new row allocates 1..n and stores n+1.
	var next int64
	err = tx.Raw(`INSERT INTO id_sequences (tenant_id, name, next_id) VALUES (?, ?, ?)
ON CONFLICT (tenant_id, name) DO UPDATE SET next_id = id_sequences.next_id + ?
RETURNING next_id`, tenantID, seq, int64(n)+1, int64(n)).Scan(&next).Error
	if err != nil {
		return 0, fmt.Errorf("db.NextIDs(tenant %d, %q, %d): %w", tenantID, seq, n, err)
	}
	return next - int64(n), nil
}

// NextID allocates one id of the per-tenant sequence seq.
func NextID(tx *gorm.DB, tenantID int64, seq string) (int64, error) {
	return NextIDs(tx, tenantID, seq, 1)
}
