// Package idempotency stores the results of requests sent with an
// Idempotency-Key, so that a caller's retry gets the first result instead
// of running again (issue 16.1; the HTTP side is pkg/httpapi's middleware).
//
// A key belongs to one tenant and one OAuth app, and to the first request
// (method, path and body digest) that used it. Begin claims it: the first
// caller runs the request and then Finishes it (the result is kept for TTL)
// or Releases it (nothing is kept, so a retry runs again). Later callers
// get the stored result, or learn that the first is still running, or that
// the key was used for another request. A claim that was neither finished
// nor released (the replica died mid-request) lapses after Lease, and the
// next caller takes it over.
//
// The stored result and the request's own writes are not one transaction:
// a replica that dies between the handler's commit and Finish leaves a
// claim that lapses, and the retry after Lease runs the request again.
// That window is the time of one UPDATE; everything else is exact.
package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"gorm.io/gorm/clause"

	"github.com/finsvc/finsvc/pkg/db"
)

// Defaults.
const (
	// TTL is how long a result is kept (and the key bound to its request).
	TTL = 24 * time.Hour
	// Lease is how long a running request holds its key before another
	// caller may take it over. Longer than any request may run (the
	// server's write timeout is well below it).
	Lease = 2 * time.Minute
)

// Request identifies one use of a key.
type Request struct {
	TenantID int64
	ClientID string // the OAuth app
	Key      string // the Idempotency-Key header, as sent
	Method   string
	Path     string
	// Digest is the caller's digest of the request body (see Digest).
	Digest string
}

// Outcome is what Begin decided.
type Outcome int

// Outcomes of Begin.
const (
	// Run: the caller holds the key and must Finish or Release it.
	Run Outcome = iota
	// Replay: Result holds the stored response.
	Replay
	// Running: the first request with the key has not finished.
	Running
	// Mismatch: the key was used for another path or body.
	Mismatch
)

// Result is a stored response.
type Result struct {
	Status      int
	ContentType string
	Location    string
	Body        []byte
}

// Store keeps keys in the idempotency_keys table.
type Store struct {
	db  *db.DB
	now db.Clock
}

// New returns the store on d, telling the time by now (nil: the system
// clock).
func New(d *db.DB, now db.Clock) *Store { return &Store{db: d, now: now} }

type row struct {
	TenantID    int64     `gorm:"column:tenant_id"`
	ClientID    string    `gorm:"column:client_id"`
	KeyHash     string    `gorm:"column:key_hash"`
	Method      string    `gorm:"column:method"`
	Path        string    `gorm:"column:path"`
	RequestHash string    `gorm:"column:request_hash"`
	State       string    `gorm:"column:state"`
	LockedUntil time.Time `gorm:"column:locked_until"`
	StatusCode  *int      `gorm:"column:status_code"`
	ContentType *string   `gorm:"column:content_type"`
	Location    *string   `gorm:"column:location"`
	Body        *string   `gorm:"column:body"`
	CreatedAt   time.Time `gorm:"column:created_at"`
	ExpiresAt   time.Time `gorm:"column:expires_at"`
}

func (row) TableName() string { return "idempotency_keys" }

const (
	running = "running"
	done    = "done"
)

// Digest is the digest of a request body as Begin compares it.
func Digest(body []byte) string {
	h := sha256.Sum256(body)
	return hex.EncodeToString(h[:])
}

// keyHash: keys are chosen by callers and may carry anything; only their
// digest is stored.
func keyHash(key string) string { return Digest([]byte(key)) }

// Begin claims r's key or reports what became of it.
func (s *Store) Begin(ctx context.Context, r Request) (Outcome, *Result, error) {
	kh := keyHash(r.Key)
	q := s.db.WithContext(ctx)
	where := "tenant_id = ? AND client_id = ? AND key_hash = ?"
	// Two rounds at most: an expired row is deleted and the insert retried.
	for range 2 {
		now := s.now.Now()
		ins := q.Clauses(clause.OnConflict{DoNothing: true}).Create(&row{
			TenantID: r.TenantID, ClientID: r.ClientID, KeyHash: kh, Method: r.Method, Path: r.Path,
			RequestHash: r.Digest, State: running, LockedUntil: now.Add(Lease), CreatedAt: now, ExpiresAt: now.Add(TTL),
		})
		if ins.Error != nil {
			return 0, nil, fmt.Errorf("idempotency: claim key: %w", ins.Error)
		}
		if ins.RowsAffected == 1 {
			return Run, nil, nil
		}
		var rows []row
		if err := q.Where(where, r.TenantID, r.ClientID, kh).Limit(1).Find(&rows).Error; err != nil {
			return 0, nil, fmt.Errorf("idempotency: read key: %w", err)
		}
		if len(rows) == 0 {
			continue // released or purged meanwhile: claim it again
		}
		k := rows[0]
		if !k.ExpiresAt.After(now) {
			if err := q.Where(where+" AND expires_at <= ?", r.TenantID, r.ClientID, kh, now).Delete(&row{}).Error; err != nil {
				return 0, nil, fmt.Errorf("idempotency: drop expired key: %w", err)
			}
			continue
		}
		if k.Method != r.Method || k.Path != r.Path || k.RequestHash != r.Digest {
			return Mismatch, nil, nil
		}
		if k.State == done {
			res := &Result{}
			if k.StatusCode != nil {
				res.Status = *k.StatusCode
			}
			if k.ContentType != nil {
				res.ContentType = *k.ContentType
			}
			if k.Location != nil {
				res.Location = *k.Location
			}
			if k.Body != nil {
				res.Body = []byte(*k.Body)
			}
			return Replay, res, nil
		}
		if k.LockedUntil.After(now) {
			return Running, nil, nil
		}
		// The claim lapsed (its replica died mid-request): take it over,
		// unless another caller just did.
		up := q.Model(&row{}).Where(where+" AND state = ? AND locked_until <= ?", r.TenantID, r.ClientID, kh, running, now).
			Update("locked_until", now.Add(Lease))
		if up.Error != nil {
			return 0, nil, fmt.Errorf("idempotency: take over key: %w", up.Error)
		}
		if up.RowsAffected == 1 {
			return Run, nil, nil
		}
		return Running, nil, nil
	}
	return Running, nil, nil
}

// Finish stores the response of the request that holds r's key.
func (s *Store) Finish(ctx context.Context, r Request, res Result) error {
	body := string(res.Body)
	err := s.db.WithContext(ctx).Model(&row{}).
		Where("tenant_id = ? AND client_id = ? AND key_hash = ? AND state = ?", r.TenantID, r.ClientID, keyHash(r.Key), running).
		Updates(map[string]any{"state": done, "status_code": res.Status, "content_type": res.ContentType, "location": res.Location, "body": body}).Error
	if err != nil {
		return fmt.Errorf("idempotency: store result: %w", err)
	}
	return nil
}

// Release gives r's key up without a result: the request changed nothing,
// and a retry with the key runs again.
func (s *Store) Release(ctx context.Context, r Request) error {
	err := s.db.WithContext(ctx).
		Where("tenant_id = ? AND client_id = ? AND key_hash = ? AND state = ?", r.TenantID, r.ClientID, keyHash(r.Key), running).
		Delete(&row{}).Error
	if err != nil {
		return fmt.Errorf("idempotency: release key: %w", err)
	}
	return nil
}

// Purge deletes up to batch keys that expired before now (the retention
// janitor calls it) and returns how many it deleted.
func Purge(ctx context.Context, d *db.DB, now time.Time, batch int) (int64, error) {
	q := d.WithContext(ctx)
	sub := q.Model(&row{}).Select("tenant_id, client_id, key_hash").Where("expires_at <= ?", now.UTC()).Limit(batch)
	if d.Dialect == db.Postgres {
		sub = sub.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"})
	}
	res := q.Where("(tenant_id, client_id, key_hash) IN (?)", sub).Delete(&row{})
	if res.Error != nil {
		return 0, fmt.Errorf("idempotency: purge: %w", res.Error)
	}
	return res.RowsAffected, nil
}
