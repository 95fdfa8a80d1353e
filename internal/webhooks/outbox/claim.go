package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/db"
)

// Claimed is a delivery a worker holds the lease of.
type Claimed struct {
	TenantID  int64  `gorm:"column:tenant_id"`
	ID        string `gorm:"column:id"`
	WebhookID int64  `gorm:"column:webhook_id"`
	EventID   string `gorm:"column:event_id"`
	Attempts  int    `gorm:"column:attempts"`
}

// Fair claiming. A claim does not take the oldest due rows
// overall: one slow or dead endpoint with a backlog would then hold every
// worker, and every other registration of every tenant would wait behind
// it. Instead:
//
//   - per registration, at most EndpointCap attempts are in flight, across
//     all replicas: the claim counts the registration's leased rows in the
//     same statement, and takes only what is left of its cap;
//   - the claimable rows are ranked round-robin: first by tenant (each
//     tenant's k-th row before any tenant's (k+1)-th), within a tenant by
//     registration (a registration with fewer attempts in flight first), and
//     only then by due time. A backlog of 10,000 for one registration
//     therefore cannot hold back a single due delivery of another.
//
// On PostgreSQL concurrent claims are serialized by a transaction-scoped
// advisory lock taken before the claim statement: under READ COMMITTED the
// statement's snapshot then includes every earlier claim, so the in-flight
// count is exact and two replicas cannot both fill the same registration's
// last slot. The lock and the claim are sent as one pipelined batch (one
// round trip, one implicit transaction: see claimPipelined), so the lock is
// held only while the server runs the claim, never across a round trip to
// this process. On SQLite the statement runs under the database write lock.

// A row is due when it is pending and its time has come, or when it is
// delivering but its lease has expired (its worker died).
const dueSQL = `status IN ` + sqlLive + ` AND next_attempt_at <= @now
    AND (status = ` + sqlPending + ` OR lease_expires_at < @now)`

// busySQL counts a registration's attempts in flight (unexpired leases);
// deliveries_inflight_idx serves it. The registration is webhooks w.
const busySQL = `(SELECT count(*) FROM deliveries x WHERE x.tenant_id = w.tenant_id AND x.webhook_id = w.id
      AND x.status = ` + sqlDelivering + ` AND x.lease_expires_at >= @now)`

// roomSQL lists each registration whose circuit lets it be claimed
// (health.go) with its cap (lim) and its attempts in flight (busy).
var roomSQL = `SELECT w.tenant_id, w.id AS webhook_id, ` + capSQL + ` AS lim, ` + busySQL + ` AS busy
  FROM webhooks w WHERE ` + claimableSQL

// claimPostgres takes each registration's oldest due rows, up to what is
// left of its cap, through deliveries_claim_idx (one short index range per
// registration, whatever the backlog), skipping rows another transaction
// holds.
var claimPostgres = `WITH room AS MATERIALIZED (` + roomSQL + `),
cand AS (
  SELECT c.tenant_id, c.id, c.next_attempt_at,
         r.busy + row_number() OVER (PARTITION BY c.tenant_id, c.webhook_id ORDER BY c.next_attempt_at, c.id) AS k
  FROM room r CROSS JOIN LATERAL (
    SELECT d.tenant_id, d.id, d.webhook_id, d.next_attempt_at FROM deliveries d
    WHERE d.tenant_id = r.tenant_id AND d.webhook_id = r.webhook_id AND ` + dueSQL + `
    ORDER BY d.next_attempt_at
    LIMIT r.lim - r.busy
    FOR UPDATE OF d SKIP LOCKED) c
  WHERE r.busy < r.lim),
ranked AS (
  SELECT tenant_id, id, k, next_attempt_at,
         row_number() OVER (PARTITION BY tenant_id ORDER BY k, next_attempt_at, id) AS tk
  FROM cand),
pick AS (SELECT tenant_id, id FROM ranked ORDER BY tk, k, next_attempt_at LIMIT @n)
UPDATE deliveries d SET status = ` + sqlDelivering + `, lease_owner = @owner, lease_expires_at = @lease, updated_at = @now
FROM pick WHERE d.tenant_id = pick.tenant_id AND d.id = pick.id
RETURNING d.tenant_id, d.id, d.webhook_id, d.event_id, d.attempts`

// claimSQLite does what claimPostgres does without LATERAL, reading only
// what it needs through the indexes: a correlated IN subquery takes each
// claimable registration's oldest due rows through deliveries_claim_idx
// (@cap of them, the most any registration may still take: SQLite's LIMIT
// cannot read the outer row, so k <= lim trims them to what is left of each
// cap), and the window functions then rank only those few rows, never the
// whole backlog. The cost grows with the number of registrations, not with
// the number of due rows.
var claimSQLite = `UPDATE deliveries SET status = ` + sqlDelivering + `, lease_owner = @owner, lease_expires_at = @lease, updated_at = @now
WHERE rowid IN (
  WITH room AS MATERIALIZED (` + roomSQL + `),
  cand AS (
    SELECT d.rowid AS rid, d.tenant_id, d.id, d.next_attempt_at, r.lim,
           r.busy + row_number() OVER (PARTITION BY d.tenant_id, d.webhook_id ORDER BY d.next_attempt_at, d.id) AS k
    FROM room r JOIN deliveries d ON d.rowid IN (
      SELECT rowid FROM deliveries
      WHERE tenant_id = r.tenant_id AND webhook_id = r.webhook_id AND ` + dueSQL + `
      ORDER BY next_attempt_at, id
      LIMIT @cap)
    WHERE r.busy < r.lim),
  ranked AS (
    SELECT rid, k, next_attempt_at,
           row_number() OVER (PARTITION BY tenant_id ORDER BY k, next_attempt_at, id) AS tk
    FROM cand WHERE k <= lim)
  SELECT rid FROM ranked ORDER BY tk, k, next_attempt_at LIMIT @n)
RETURNING tenant_id, id, webhook_id, event_id, attempts`

// claimLock is the advisory lock key that serializes claims on PostgreSQL
// ("finsvc" in ASCII).
const claimLock int64 = 0x66696e737663

// ClaimRequest says what a worker asks for.
type ClaimRequest struct {
	Owner string // lease_owner
	N     int    // at most this many rows (the worker's free slots)
	// EndpointCap is the most attempts in flight per registration, across
	// replicas (FINSVC_WEBHOOK_ENDPOINT_CONCURRENCY); at least 1.
	EndpointCap int
	Now         time.Time
	LeaseUntil  time.Time
}

// Claim leases up to r.N due deliveries, across tenants, fairly (see the
// comment above dueSQL) and never beyond a registration's cap.
func Claim(ctx context.Context, d *db.DB, r ClaimRequest) ([]Claimed, error) {
	if r.EndpointCap < 1 {
		r.EndpointCap = 1
	}
	args := map[string]any{"now": r.Now, "n": r.N, "owner": r.Owner, "lease": r.LeaseUntil, "cap": r.EndpointCap}
	var rows []Claimed
	var err error
	if d.Dialect == db.Postgres {
		rows, err = claimPipelined(ctx, d, r)
		if errors.Is(err, errNoPgxConn) {
			// Inside a transaction (or on a pool that hides its
			// connections): the same two statements, in that transaction.
			err = d.Tx(ctx, func(tx *gorm.DB) error {
				if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", claimLock).Error; err != nil {
					return err
				}
				return tx.Raw(claimPostgres, args).Scan(&rows).Error
			})
		}
	} else {
		// One statement under the database write lock: no transaction
		// needed.
		err = d.WithContext(ctx).Raw(claimSQLite, args).Scan(&rows).Error
	}
	if err != nil {
		return nil, fmt.Errorf("outbox: claim deliveries: %w", err)
	}
	return rows, nil
}

// claimPostgresPositional is claimPostgres with pgx's positional parameters
// (claimPipelined talks to pgx directly, without GORM's named ones). @now
// is replaced before @n, which it begins with.
var claimPostgresPositional = strings.NewReplacer(
	"@now", "$1", "@n", "$2", "@owner", "$3", "@lease", "$4", "@cap", "$5",
).Replace(claimPostgres)

// errNoPgxConn: claimPipelined cannot reach a pgx connection of its own.
var errNoPgxConn = errors.New("no pgx connection to pipeline the claim on")

// claimPipelined runs the advisory lock and the claim on PostgreSQL in one
// round trip. A pgx batch is sent with a single Sync, so both statements
// form one implicit transaction: the lock is held until the claim has
// committed, and the claim, a later statement under READ COMMITTED, takes
// its snapshot only once it holds the lock, so it sees every earlier
// claim. As a BEGIN / lock / claim / COMMIT transaction this took four round
// trips, the last three with the lock held, and every claim of every
// replica waited on them (BENCHMARKS.md, "Webhook delivery").
func claimPipelined(ctx context.Context, d *db.DB, r ClaimRequest) ([]Claimed, error) {
	var conn *sql.Conn
	switch p := d.DB.Statement.ConnPool.(type) {
	case *sql.Conn: // a session pinned to one connection
		conn = p
	case *sql.DB, gorm.GetDBConnector: // the pool, or GORM's prepared-statement pool over it
		sqlDB, ok := p.(*sql.DB)
		if !ok {
			var err error
			if sqlDB, err = p.(gorm.GetDBConnector).GetDBConn(); err != nil {
				return nil, err
			}
		}
		var err error
		if conn, err = sqlDB.Conn(ctx); err != nil {
			return nil, err
		}
		defer conn.Close()
	default: // a transaction
		return nil, errNoPgxConn
	}
	var rows []Claimed
	err := conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return errNoPgxConn
		}
		b := &pgx.Batch{}
		b.Queue("SELECT pg_advisory_xact_lock($1)", claimLock)
		b.Queue(claimPostgresPositional, r.Now, r.N, r.Owner, r.LeaseUntil, r.EndpointCap)
		br := sc.Conn().SendBatch(ctx, b)
		if _, err := br.Exec(); err != nil {
			return errors.Join(err, br.Close())
		}
		q, err := br.Query()
		if err != nil {
			return errors.Join(err, br.Close())
		}
		for q.Next() {
			var c Claimed
			if err := q.Scan(&c.TenantID, &c.ID, &c.WebhookID, &c.EventID, &c.Attempts); err != nil {
				q.Close()
				return errors.Join(err, br.Close())
			}
			rows = append(rows, c)
		}
		q.Close()
		if err := q.Err(); err != nil {
			return errors.Join(err, br.Close())
		}
		return br.Close()
	})
	return rows, err
}
