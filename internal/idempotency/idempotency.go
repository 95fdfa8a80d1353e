// Package idempotency runs a request sent with an Idempotency-Key at most
// once and keeps its outcome, so that a caller's retry gets the first
// outcome instead of running again. The HTTP side is internal/httpapi's
// idempotency middleware, which runs after authentication and
// authorization: a replay is only ever served to a caller the operation
// would admit anyway.
//
// A key belongs to one tenant, one OAuth app and one user (the principal
// the token acts for), and to the first request (method, path and body
// digest) that used it. Another principal's key of the same name is simply
// another key.
//
// One commit. Do runs the request in a database transaction that every
// statement of the request joins (db.InTx), and writes the key's row, with
// the response, in that same transaction. Either the request's effects
// (rows, outbox events) and its key both commit, or neither does: a process
// killed, a connection dropped or a database lost at any point leaves a
// completed key (replayed) or nothing (the retry runs, once).
//
// No lease. While a request runs, its key is claimed by something the
// database or the process releases by itself when the request ends, however
// it ends: in this process an in-memory claim, across replicas a
// transaction-scoped advisory lock on PostgreSQL (released at commit,
// rollback, or when the connection or its process dies). A concurrent
// duplicate is told InFlight at once; a retry after a crash runs as soon as
// the database has noticed the dead connection. On SQLite there is one
// process, whose claim is the in-memory one.
//
// Durable replays. A replay confirms what the first request did, so it
// is sent only once the stored outcome is durable where the deployment
// promises (db.WaitDurable): a first request's commit may have reached
// this server's disk and not the synchronous standby when the server
// crashed, and the restarted server shows it. A barrier that does not
// complete is an unknown outcome (db.ErrOutcomeUnknown), never a replay.
//
// What is kept (Disposition): a result the handler decided (2xx, and 4xx of
// the handler's own rules: a duplicate, a conflict, a missing resource) is
// kept for TTL and replayed; a 4xx keeps the result but not the effects.
// A failure that decided nothing (5xx, the database unreachable) keeps
// nothing, and the retry runs again. Requests refused before the handler
// (authentication, authorization, validation, rate limit, a concurrent
// duplicate) never reach Do and keep nothing.
//
// A key sent again with another request (Mismatch) is refused, and the
// refusal is recorded in the audit log (audit.IdempotentReplayRefused, the
// key's digest as target) by the caller's principal: a key replayed with
// another body is either a client bug or someone probing for a stored
// response.
//
// Nothing secret at rest: the stored body may hold a secret the API shows
// once (a webhook secret, a generated password), so it is sealed
// (AES-GCM, bound to the key's identity); the key itself is kept only as
// a digest.
package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/sealing"
)

// TTL is how long an outcome is kept (and the key bound to its request).
const TTL = 24 * time.Hour

// Request identifies one use of a key.
type Request struct {
	TenantID int64
	ClientID string // the OAuth app
	UserID   int64  // the user the token acts for
	Key      string // the Idempotency-Key header, as sent
	Method   string
	Path     string
	// Digest is the caller's digest of the request body (see Digest).
	Digest string
	// RequestID is the request's id, kept with the outcome and sent with
	// every replay of it.
	RequestID string
}

// Outcome is what Do did.
type Outcome int

// Outcomes of Do.
const (
	// Ran: the request ran now; Result is its response.
	Ran Outcome = iota
	// Replayed: Result is the stored response of the first request.
	Replayed
	// InFlight: the first request with the key has not finished; nothing ran.
	InFlight
	// Mismatch: the key was used for another path or body; nothing ran.
	Mismatch
)

// Disposition is what becomes of a request that ran.
type Disposition int

// Dispositions of a run.
const (
	// Commit keeps the request's effects and its result.
	Commit Disposition = iota
	// KeepResult rolls the request's effects back and keeps its result
	// (a 4xx of the handler's rules: nothing changed, and a retry gets the
	// same answer).
	KeepResult
	// Forget rolls everything back and keeps nothing (a failure that
	// decided nothing): a retry runs again.
	Forget
)

// Result is a response.
type Result struct {
	Status      int
	ContentType string
	Location    string
	Body        []byte
	// RequestID is the id of the request that produced the result.
	RequestID string
}

// SealPurpose is the sealing purpose (sealing.NewFor) of stored bodies: a
// key of their own, apart from the webhook secrets'.
const SealPurpose = "finsvc idempotent responses v1"

// SealedColumns are the sealed columns of this package's table, for
// `finsvc secret reseal` and `finsvc secret status`: the body, bound to
// the key's identity (Request.ad).
func SealedColumns() []sealing.Column {
	return []sealing.Column{{
		Table: "idempotency_keys", Name: "body", Purpose: SealPurpose,
		Keys: []string{"tenant_id", "client_id", "user_id", "key_hash"},
		AD:   func(k []string) []byte { return []byte("idempotency:" + strings.Join(k, ":")) },
	}}
}

// Sealer seals stored bodies (sealing.Box).
type Sealer interface {
	Seal(plaintext string, ad []byte) (string, error)
	Open(ciphertext string, ad []byte) (string, error)
}

// Store keeps keys in the idempotency_keys table.
type Store struct {
	db  *db.DB
	now db.Clock
	box Sealer

	inflight sync.Map // identity → struct{}: the claims of this process

	// beforeCommit, when set, runs after the key's row is written and
	// before the commit: the fault tests stop the process there.
	beforeCommit func(context.Context)
}

// New returns the store on d, sealing bodies with box and telling the
// time by now (nil: the system clock).
func New(d *db.DB, box Sealer, now db.Clock) *Store {
	return &Store{db: d, now: now, box: box}
}

// BeforeCommit sets a hook run inside the transaction, after the request's
// effects and its key's row are written and before the commit. For fault
// tests (kill the process there); nil removes it.
func (s *Store) BeforeCommit(fn func(context.Context)) { s.beforeCommit = fn }

type row struct {
	TenantID    int64     `gorm:"column:tenant_id"`
	ClientID    string    `gorm:"column:client_id"`
	UserID      int64     `gorm:"column:user_id"`
	KeyHash     string    `gorm:"column:key_hash"`
	Method      string    `gorm:"column:method"`
	Path        string    `gorm:"column:path"`
	RequestHash string    `gorm:"column:request_hash"`
	RequestID   string    `gorm:"column:request_id"`
	StatusCode  int       `gorm:"column:status_code"`
	ContentType string    `gorm:"column:content_type"`
	Location    string    `gorm:"column:location"`
	Body        string    `gorm:"column:body"` // sealed
	CreatedAt   time.Time `gorm:"column:created_at"`
	ExpiresAt   time.Time `gorm:"column:expires_at"`
}

func (row) TableName() string { return "idempotency_keys" }

// Digest is the digest of a request body as Do compares it.
func Digest(body []byte) string {
	h := sha256.Sum256(body)
	return hex.EncodeToString(h[:])
}

// keyHash: keys are chosen by callers and may carry anything; only their
// digest is stored (and is the audit record's target).
func keyHash(key string) string { return Digest([]byte(key)) }

// identity names r's key: what the in-memory claim, the advisory lock and
// the sealing's additional data are bound to.
func (r Request) identity() string {
	return strconv.FormatInt(r.TenantID, 10) + ":" + r.ClientID + ":" + strconv.FormatInt(r.UserID, 10) + ":" + keyHash(r.Key)
}

// lockID is the advisory lock of r's key: 63 bits of the identity's digest
// (a collision only makes two keys wait for each other's InFlight).
func (r Request) lockID() int64 {
	h := sha256.Sum256([]byte("idempotency:" + r.identity()))
	return int64(binary.BigEndian.Uint64(h[:8]) >> 1)
}

func (r Request) ad() []byte { return []byte("idempotency:" + r.identity()) }

const where = "tenant_id = ? AND client_id = ? AND user_id = ? AND key_hash = ?"

func (r Request) args() []any { return []any{r.TenantID, r.ClientID, r.UserID, keyHash(r.Key)} }

// errSettled ends Do's transaction without writing anything: the outcome
// was decided by what was already stored, or by a run that keeps nothing.
var errSettled = errors.New("idempotency: settled without writing")

// errUndo rolls a run's savepoint back when its effects are not kept.
var errUndo = errors.New("idempotency: effects not kept")

// Do runs r once (see the package comment). run is called with a context
// whose every statement joins Do's transaction; it returns the response and
// what to keep of it. Do returns the outcome and the response to send: the
// one run produced, or the stored one.
func (s *Store) Do(ctx context.Context, r Request, run func(ctx context.Context) (Result, Disposition)) (Outcome, *Result, error) {
	id := r.identity()
	if _, busy := s.inflight.LoadOrStore(id, struct{}{}); busy {
		return InFlight, nil, nil
	}
	defer s.inflight.Delete(id)

	var (
		out Outcome
		res *Result
	)
	// The request runs to its end once started: a caller that hangs up
	// retries, and gets the outcome.
	caller := ctx
	ctx = context.WithoutCancel(ctx)
	err := s.db.InTx(ctx, func(ctx db.TxContext, tx *gorm.DB) error {
		if s.db.Dialect == db.Postgres {
			var claimed bool
			if err := tx.Raw("SELECT pg_try_advisory_xact_lock(?)", r.lockID()).Scan(&claimed).Error; err != nil {
				return fmt.Errorf("idempotency: claim key: %w", err)
			}
			if !claimed {
				out = InFlight
				return errSettled
			}
		}
		// Under the claim: a stored outcome is final (rows exist only
		// committed), and nothing else can store one meanwhile.
		o, stored, found, err := s.lookup(ctx, tx, r)
		if err != nil {
			return err
		}
		if found {
			out, res = o, stored
			if o == Mismatch {
				// The refusal is the one thing this transaction writes.
				return audit.RecordIn(ctx, tx, r.TenantID, audit.Entry{Action: audit.IdempotentReplayRefused,
					TargetType: audit.TargetIdempotencyKey, TargetID: keyHash(r.Key), Outcome: audit.Failure})
			}
			return errSettled
		}
		var (
			result Result
			disp   Disposition
		)
		// The run in a savepoint of its own, so that a result kept without
		// its effects can roll them back and still write the key.
		err = s.db.InTx(ctx, func(ctx db.TxContext, _ *gorm.DB) error {
			result, disp = run(ctx)
			if disp != Commit {
				return errUndo
			}
			return nil
		})
		if err != nil && !errors.Is(err, errUndo) {
			return err
		}
		out, res = Ran, &result
		if disp == Forget {
			return errSettled
		}
		if err := s.insert(ctx, tx, r, result); err != nil {
			return err
		}
		if s.beforeCommit != nil {
			s.beforeCommit(ctx)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errSettled) {
		return 0, nil, err
	}
	if out == Replayed {
		// The stored outcome was read by a transaction that wrote nothing,
		// whose commit waited for nobody: it may be on this server only.
		if err := s.db.WaitDurable(caller); err != nil {
			return 0, nil, fmt.Errorf("idempotency: replay: %w", err)
		}
	}
	return out, res, nil
}

// lookup reads r's stored outcome, if any that has not expired.
func (s *Store) lookup(ctx context.Context, q *gorm.DB, r Request) (Outcome, *Result, bool, error) {
	var rows []row
	if err := q.WithContext(ctx).Where(where, r.args()...).Limit(1).Find(&rows).Error; err != nil {
		return 0, nil, false, fmt.Errorf("idempotency: read key: %w", err)
	}
	if len(rows) == 0 || !rows[0].ExpiresAt.After(s.now.Now()) {
		return 0, nil, false, nil
	}
	k := rows[0]
	if k.Method != r.Method || k.Path != r.Path || k.RequestHash != r.Digest {
		return Mismatch, nil, true, nil
	}
	body, err := s.box.Open(k.Body, r.ad())
	if err != nil {
		return 0, nil, false, fmt.Errorf("idempotency: open stored body: %w", err)
	}
	return Replayed, &Result{Status: k.StatusCode, ContentType: k.ContentType, Location: k.Location,
		Body: []byte(body), RequestID: k.RequestID}, true, nil
}

// insert writes r's key with res, replacing an expired row of the key.
func (s *Store) insert(ctx context.Context, tx *gorm.DB, r Request, res Result) error {
	sealed, err := s.box.Seal(string(res.Body), r.ad())
	if err != nil {
		return fmt.Errorf("idempotency: seal body: %w", err)
	}
	now := s.now.Now()
	k := row{
		TenantID: r.TenantID, ClientID: r.ClientID, UserID: r.UserID, KeyHash: keyHash(r.Key),
		Method: r.Method, Path: r.Path, RequestHash: r.Digest, RequestID: r.RequestID,
		StatusCode: res.Status, ContentType: res.ContentType, Location: res.Location, Body: sealed,
		CreatedAt: now, ExpiresAt: now.Add(TTL),
	}
	// An expired row of the key is replaced in the same statement.
	res2 := tx.WithContext(ctx).Clauses(clause.OnConflict{
		Columns: []clause.Column{{Name: "tenant_id"}, {Name: "client_id"}, {Name: "user_id"}, {Name: "key_hash"}},
		DoUpdates: clause.AssignmentColumns([]string{"method", "path", "request_hash", "request_id", "status_code",
			"content_type", "location", "body", "created_at", "expires_at"}),
		Where: clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "idempotency_keys.expires_at <= ?", Vars: []any{now}}}},
	}).Create(&k)
	if res2.Error != nil {
		return fmt.Errorf("idempotency: store result: %w", res2.Error)
	}
	if res2.RowsAffected != 1 {
		return errors.New("idempotency: store result: the key holds a live result")
	}
	return nil
}

// Purge deletes up to batch keys that expired before now (the retention
// janitor calls it) and returns how many it deleted.
func Purge(ctx context.Context, d *db.DB, now time.Time, batch int) (int64, error) {
	q := d.WithContext(ctx)
	sub := q.Model(&row{}).Select("tenant_id, client_id, user_id, key_hash").Where("expires_at <= ?", now.UTC()).Limit(batch)
	if d.Dialect == db.Postgres {
		sub = sub.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"})
	}
	res := q.Where("(tenant_id, client_id, user_id, key_hash) IN (?)", sub).Delete(&row{})
	if res.Error != nil {
		return 0, fmt.Errorf("idempotency: purge: %w", res.Error)
	}
	return res.RowsAffected, nil
}
