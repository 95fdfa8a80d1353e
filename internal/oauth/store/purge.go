package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/finsvc/finsvc/internal/db"
)

// DefaultPurgeBatch is how many rows one DELETE of Purge removes at most:
// small enough that a batch holds its locks (on SQLite, the database's one
// write lock) for milliseconds, so token requests never queue behind the
// janitor.
const DefaultPurgeBatch = 1000

// PurgePolicy says which OAuth state Purge deletes.
type PurgePolicy struct {
	// Now is the janitor's clock reading.
	Now time.Time
	// Grace is how long used authorization codes and inactive (rotated or
	// revoked) refresh tokens are kept past their own expiry. fosite's
	// reuse detection needs them: replaying a used code or a rotated
	// refresh token finds the inactive row and revokes the whole family;
	// once the row is gone a replay is only an invalid_grant. Inactive rows
	// therefore live for at least their original lifetime plus Grace.
	Grace time.Duration
	// Batch is the number of rows per DELETE (DefaultPurgeBatch if <= 0).
	Batch int
}

// PurgeStats counts the rows Purge deleted.
type PurgeStats struct {
	Codes, PKCE, AccessTokens, RefreshTokens, Sessions, Flashes int64
}

// Total is the number of rows deleted.
func (s PurgeStats) Total() int64 {
	return s.Codes + s.PKCE + s.AccessTokens + s.RefreshTokens + s.Sessions + s.Flashes
}

// purgeTarget is one table and the condition of its dead rows.
type purgeTarget struct {
	table string
	key   string // the primary key after tenant_id
	where string // named parameters: @now, @cutoff (now - grace)
	count *int64
}

// Purge deletes dead OAuth state of every tenant (a maintenance job: it
// is the one place these tables are queried without tenant.Scope, because
// expiry is a property of the row, not of a tenant):
//
//   - authorization codes: unused ones once expired; used ones Grace after
//     expiry (reuse detection);
//   - PKCE requests once expired (fosite deletes them at the exchange);
//   - access tokens once expired, and inactive ones Grace after they were
//     issued (the store deletes revoked access tokens itself, so inactive
//     rows only come from elsewhere);
//   - refresh tokens: active ones once expired; inactive ones Grace after
//     expiry (reuse detection);
//   - browser sessions once expired, and the nonces of flashes never
//     taken once expired.
//
// Each table is emptied in batches of at most p.Batch rows, each its own
// statement and transaction. On PostgreSQL the batch is picked with FOR
// UPDATE SKIP LOCKED, so janitors of several replicas share the work
// instead of deadlocking on each other's rows. A cancelled ctx stops between
// (or inside) batches; what was deleted stays deleted and is counted.
func (s *Store) Purge(ctx context.Context, p PurgePolicy) (PurgeStats, error) {
	var st PurgeStats
	batch := p.Batch
	if batch <= 0 {
		batch = DefaultPurgeBatch
	}
	if p.Grace < 0 {
		return st, errors.New("oauth store: purge grace must not be negative")
	}
	now := p.Now.UTC()
	args := map[string]any{"now": now, "cutoff": now.Add(-p.Grace), "t": true, "f": false, "batch": batch}
	targets := []purgeTarget{
		{tableCodes, "signature", "(active = @t AND expires_at < @now) OR (active = @f AND expires_at < @cutoff)", &st.Codes},
		{tablePKCE, "signature", "expires_at < @now", &st.PKCE},
		{tableAccess, "signature", "expires_at < @now OR (active = @f AND requested_at < @cutoff)", &st.AccessTokens},
		{tableRefresh, "signature", "(active = @t AND expires_at < @now) OR (active = @f AND expires_at < @cutoff)", &st.RefreshTokens},
		{"web_sessions", "id_hash", "expires_at < @now", &st.Sessions},
		{"flash_nonces", "nonce", "expires_at < @now", &st.Flashes},
	}
	lock := ""
	if s.db.Dialect == db.Postgres {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	for _, t := range targets {
		// Row values over the primary key: portable (PostgreSQL, SQLite ≥
		// 3.15) and served by the primary key index, unlike ctid/rowid.
		q := fmt.Sprintf("DELETE FROM %[1]s WHERE (tenant_id, %[2]s) IN (SELECT tenant_id, %[2]s FROM %[1]s WHERE %[3]s LIMIT @batch%[4]s)",
			t.table, t.key, t.where, lock)
		for {
			if err := ctx.Err(); err != nil {
				return st, fmt.Errorf("oauth store: purge %s: %w", t.table, err)
			}
			res := s.db.DB.WithContext(ctx).Exec(q, args)
			if res.Error != nil {
				return st, fmt.Errorf("oauth store: purge %s: %w", t.table, res.Error)
			}
			*t.count += res.RowsAffected
			if res.RowsAffected < int64(batch) {
				break
			}
		}
	}
	return st, nil
}
