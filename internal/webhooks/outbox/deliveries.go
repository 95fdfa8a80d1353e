package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/db"
)

// The life of a delivery row after Emit: workers claim it under a lease,
// record the outcome of each attempt, and the registry cancels, requeues or
// deletes it. Every write to the deliveries, delivery_history and
// delivery_attempts tables is in this package.

// Update is what a claimed delivery ends with: its new status and, when an
// HTTP attempt was made, what the target answered.
type Update struct {
	Status Status
	// NextAttemptAt is when a Pending row is due again; nil otherwise.
	NextAttemptAt *time.Time
	// LastError replaces last_error when set. When nil, last_error keeps
	// its value, unless Attempt is set (a new attempt clears it).
	LastError *string
	// Attempt is set when the target was tried (successfully or not); it
	// counts in attempts.
	Attempt *Attempt
}

// Attempt describes one HTTP attempt. Finish keeps it in
// delivery_attempts (with the update's LastError as its error), whatever
// later attempts and redeliveries do to the delivery row.
type Attempt struct {
	Number     int // the row's attempts count including this one
	At         time.Time
	StatusCode int    // 0 when no response came
	Excerpt    string // the start of the response body, when one came
	Duration   time.Duration
	// Headers are the request headers the attempt sent, kept with it
	// (migration 00180): the caller passes only headers that hold no
	// secret (signatures are HMACs; the secret is never a header).
	Headers map[string]string
}

// attemptColumns are delivery_attempts' columns in the order attemptValues
// gives the values after the delivery's identity.
const attemptColumns = "tenant_id, delivery_id, n, webhook_id, event_id, attempted_at, status_code, response_excerpt, duration_ms, error, request_headers"

// attemptValues are the attempt's attempted_at, status_code,
// response_excerpt, duration_ms, error and request_headers.
func (u Update) attemptValues() []any {
	a := u.Attempt
	var code, excerpt, errText, headers any
	if a.StatusCode != 0 {
		code, excerpt = a.StatusCode, a.Excerpt
	}
	if u.LastError != nil {
		errText = *u.LastError
	}
	if len(a.Headers) > 0 {
		// A map of strings always marshals.
		b, _ := json.Marshal(a.Headers)
		headers = string(b)
	}
	return []any{a.At, code, excerpt, a.Duration.Milliseconds(), errText, headers}
}

// nextAttemptSQL numbers a delivery's next attempt (1, 2, … across
// redeliveries); only the lease holder writes one, so no two race.
const nextAttemptSQL = "(SELECT COALESCE(MAX(a.n), 0) + 1 FROM delivery_attempts a WHERE a.tenant_id = s.tenant_id AND a.delivery_id = s.id)"

// pgAttemptInsert inserts the attempt of each row of src, a CTE returning
// tenant_id, id, webhook_id and event_id (the rows just updated or moved),
// so that the outcome and its attempt are one statement on PostgreSQL.
func pgAttemptInsert(src string) string {
	return "INSERT INTO delivery_attempts (" + attemptColumns + ") SELECT s.tenant_id, s.id, " + nextAttemptSQL +
		", s.webhook_id, s.event_id, CAST(? AS timestamptz), CAST(? AS integer), CAST(? AS text), CAST(? AS integer), CAST(? AS text), CAST(? AS text) FROM " + src + " s"
}

func (u Update) columns(now time.Time) map[string]any {
	set := map[string]any{
		"status": string(u.Status), "next_attempt_at": nil,
		"lease_owner": nil, "lease_expires_at": nil, "updated_at": now,
	}
	if u.NextAttemptAt != nil {
		set["next_attempt_at"] = *u.NextAttemptAt
	}
	if a := u.Attempt; a != nil {
		set["attempts"], set["last_attempt_at"] = a.Number, a.At
		set["last_status_code"], set["response_excerpt"], set["last_error"] = nil, nil, nil
		if a.StatusCode != 0 {
			set["last_status_code"], set["response_excerpt"] = a.StatusCode, a.Excerpt
		}
	}
	if u.LastError != nil {
		set["last_error"] = *u.LastError
	}
	return set
}

// Finish writes u to the claimed delivery and hands its lease back, provided
// owner still holds the lease; held reports whether it did. A final status
// moves the row to delivery_history (see move). u.Attempt, when set, is
// appended to delivery_attempts in the same statement (PostgreSQL) or
// transaction (SQLite). then, if not nil, runs in the same transaction
// after the write (and only when held).
func Finish(ctx context.Context, d *db.DB, c Claimed, owner string, u Update, now time.Time, then func(tx *gorm.DB) error) (held bool, err error) {
	const where = "tenant_id = ? AND id = ? AND lease_owner = ? AND status = " + sqlDelivering
	args := []any{c.TenantID, c.ID, owner}
	pg := d.Dialect == db.Postgres
	var att *attempt
	if u.Attempt != nil && pg {
		att = &attempt{vals: u.attemptValues()}
	}
	write := func(tx *gorm.DB) error {
		var n int64
		var err error
		switch {
		case u.Status.Final():
			n, err = move(tx, "deliveries", "delivery_history", where, args, u.columns(now), att)
		case att != nil:
			n, err = pgUpdate(tx, where, args, u.columns(now), att)
		default:
			r := tx.Table("deliveries").Where(where, args...).Updates(u.columns(now))
			n, err = r.RowsAffected, r.Error
		}
		if err != nil {
			return err
		}
		held = n > 0
		if held && u.Attempt != nil && !pg {
			err := tx.Exec("INSERT INTO delivery_attempts ("+attemptColumns+") SELECT s.tenant_id, s.id, "+nextAttemptSQL+
				", ?, ?, ?, ?, ?, ?, ?, ? FROM (SELECT ? AS tenant_id, ? AS id) s",
				append(append([]any{c.WebhookID, c.EventID}, u.attemptValues()...), c.TenantID, c.ID)...).Error
			if err != nil {
				return err
			}
		}
		if held && then != nil {
			return then(tx)
		}
		return nil
	}
	if then == nil && (pg || (!u.Status.Final() && u.Attempt == nil)) {
		// A single statement needs no transaction; without this GORM
		// would wrap the UPDATE in BEGIN … COMMIT, two more round trips
		// after every attempt.
		err = write(d.WithContext(ctx).Session(&gorm.Session{SkipDefaultTransaction: true}))
	} else {
		err = d.Tx(ctx, write)
	}
	if err != nil {
		return false, fmt.Errorf("outbox: record delivery %s: %w", c.ID, err)
	}
	return held, nil
}

// logColumns are the columns of deliveries and delivery_history, in their
// order, with their PostgreSQL types: a moved row's new values are bound
// parameters in a SELECT list, whose types PostgreSQL cannot infer.
var logColumns = []struct{ name, pgType string }{
	{"tenant_id", "bigint"}, {"id", "uuid"}, {"webhook_id", "bigint"}, {"event_id", "uuid"},
	{"status", "text"}, {"attempts", "integer"}, {"next_attempt_at", "timestamptz"},
	{"lease_owner", "text"}, {"lease_expires_at", "timestamptz"}, {"last_status_code", "integer"},
	{"last_error", "text"}, {"response_excerpt", "text"}, {"last_attempt_at", "timestamptz"},
	{"created_at", "timestamptz"}, {"updated_at", "timestamptz"},
}

// attempt is an attempt to append, on PostgreSQL, for each row an update
// or a move writes: its attemptValues.
type attempt struct{ vals []any }

// pgUpdate updates the deliveries that match where (with args) with set,
// and appends att for each, in one statement (PostgreSQL); it returns how
// many it updated.
func pgUpdate(tx *gorm.DB, where string, args []any, set map[string]any, att *attempt) (int64, error) {
	var sets []string
	var vals []any
	for _, c := range logColumns {
		v, ok := set[c.name]
		switch {
		case !ok:
		case v == nil:
			sets = append(sets, c.name+" = NULL")
		default:
			sets = append(sets, c.name+" = CAST(? AS "+c.pgType+")")
			vals = append(vals, v)
		}
	}
	r := tx.Exec("WITH upd AS (UPDATE deliveries SET "+strings.Join(sets, ", ")+" WHERE "+where+
		" RETURNING tenant_id, id, webhook_id, event_id) "+pgAttemptInsert("upd"),
		append(append(vals, args...), att.vals...)...)
	return r.RowsAffected, r.Error
}

// move moves the rows of table from that match where (with args) to table
// to, with the columns of set replaced, inside tx, and returns how many
// moved. att, when set (PostgreSQL only), is appended for each moved row in
// the same statement. deliveries holds the live queue (pending, delivering) and
// delivery_history the finished deliveries (migration 00090): a row moves to
// the history when it reaches a final status and back when it is
// redelivered, so that the claim's table and indexes stay as large as the
// queue, whatever the history. On PostgreSQL the move is one statement (its
// DELETE locks the rows, so a concurrent purge or claim skips or waits for
// them); on SQLite it is an INSERT … SELECT and a DELETE under the
// database write lock, so tx must be a transaction there.
func move(tx *gorm.DB, from, to, where string, args []any, set map[string]any, att *attempt) (int64, error) {
	pg := tx.Dialector.Name() == "postgres"
	names := make([]string, len(logColumns))
	exprs := make([]string, len(logColumns))
	var vals []any
	for i, c := range logColumns {
		names[i] = c.name
		v, ok := set[c.name]
		switch {
		case !ok:
			exprs[i] = c.name
		case v == nil:
			exprs[i] = "NULL"
		case pg:
			exprs[i] = "CAST(? AS " + c.pgType + ")"
			vals = append(vals, v)
		default:
			exprs[i] = "?"
			vals = append(vals, v)
		}
	}
	cols, sel := strings.Join(names, ", "), strings.Join(exprs, ", ")
	if pg {
		q := "WITH moved AS (DELETE FROM " + from + " WHERE " + where + " RETURNING *) INSERT INTO " + to + " (" + cols + ") SELECT " + sel + " FROM moved"
		all := append(append([]any{}, args...), vals...)
		if att != nil {
			q = "WITH moved AS (DELETE FROM " + from + " WHERE " + where + " RETURNING *), ins AS (INSERT INTO " + to + " (" + cols + ") SELECT " + sel +
				" FROM moved RETURNING tenant_id, id, webhook_id, event_id) " + pgAttemptInsert("ins")
			all = append(all, att.vals...)
		}
		r := tx.Exec(q, all...)
		return r.RowsAffected, r.Error
	}
	r := tx.Exec("INSERT INTO "+to+" ("+cols+") SELECT "+sel+" FROM "+from+" WHERE "+where, append(vals, args...)...)
	if r.Error != nil || r.RowsAffected == 0 {
		return 0, r.Error
	}
	return r.RowsAffected, tx.Exec("DELETE FROM "+from+" WHERE "+where, args...).Error
}

// CancelPending cancels the registration's deliveries that wait for an
// attempt, inside tx (they move to the history). Deliveries in flight
// finish; workers re-check eligibility before each attempt. reason, when not
// empty, becomes their last_error.
func CancelPending(tx *gorm.DB, tenantID, webhookID int64, reason string, now time.Time) error {
	set := map[string]any{"status": string(Cancelled), "next_attempt_at": nil, "updated_at": now}
	if reason != "" {
		set["last_error"] = reason
	}
	_, err := move(tx, "deliveries", "delivery_history", "tenant_id = ? AND webhook_id = ? AND status = "+sqlPending,
		[]any{tenantID, webhookID}, set, nil)
	if err != nil {
		return fmt.Errorf("outbox: cancel pending deliveries of webhook %d: %w", webhookID, err)
	}
	return nil
}

// Requeue makes a delivery that is not in flight pending again, due now,
// with a fresh retry schedule (the row's attempts count, which the
// schedule reads, restarts at 0), inside tx: a pending one starts again, a
// finished one comes back from the history. A delivery in flight is left
// alone. Its earlier attempts stay in delivery_attempts; the next one is
// appended after them.
func Requeue(tx *gorm.DB, tenantID, webhookID int64, deliveryID string, now time.Time) error {
	set := map[string]any{
		"status": string(Pending), "attempts": 0, "next_attempt_at": now,
		"lease_owner": nil, "lease_expires_at": nil, "updated_at": now,
	}
	args := []any{tenantID, deliveryID, webhookID}
	r := tx.Table("deliveries").Where("tenant_id = ? AND id = ? AND webhook_id = ? AND status = "+sqlPending, args...).Updates(set)
	err := r.Error
	if err == nil && r.RowsAffected == 0 {
		_, err = move(tx, "delivery_history", "deliveries", "tenant_id = ? AND id = ? AND webhook_id = ?", args, set, nil)
	}
	if err != nil {
		return fmt.Errorf("outbox: requeue delivery %s: %w", deliveryID, err)
	}
	return nil
}

// DeleteDeliveries removes every delivery of the registration, live or
// finished, inside tx (the delivery log belongs to the registration).
func DeleteDeliveries(tx *gorm.DB, tenantID, webhookID int64) error {
	for _, t := range []string{"deliveries", "delivery_history", "delivery_attempts"} {
		if err := tx.Table(t).Where("tenant_id = ? AND webhook_id = ?", tenantID, webhookID).Delete(nil).Error; err != nil {
			return fmt.Errorf("outbox: delete deliveries of webhook %d: %w", webhookID, err)
		}
	}
	return nil
}

// Depth reports the outbox depth for metrics: deliveries waiting for an
// attempt (pending) and in flight (delivering), across tenants.
func Depth(ctx context.Context, d *db.DB) (pending, delivering int64, err error) {
	var rows []struct {
		Status Status
		N      int64
	}
	err = d.WithContext(ctx).Table("deliveries").Select("status, COUNT(*) AS n").
		Where("status IN " + sqlLive).Group("status").Scan(&rows).Error
	if err != nil {
		return 0, 0, fmt.Errorf("outbox: depth: %w", err)
	}
	for _, r := range rows {
		if r.Status == Pending {
			pending = r.N
		} else {
			delivering = r.N
		}
	}
	return pending, delivering, nil
}

// RecordedAttempt is one kept attempt of a delivery (delivery_attempts).
type RecordedAttempt struct {
	N               int       `gorm:"column:n"`
	AttemptedAt     time.Time `gorm:"column:attempted_at"`
	StatusCode      *int      `gorm:"column:status_code"`
	ResponseExcerpt *string   `gorm:"column:response_excerpt"`
	DurationMS      int64     `gorm:"column:duration_ms"`
	Error           *string   `gorm:"column:error"`
	RequestHeaders  *string   `gorm:"column:request_headers"`
}

// Header is one request header an attempt sent.
type Header struct{ Name, Value string }

// Headers are the request headers the attempt sent, by name (case
// ignored); nil when none were kept (an attempt recorded before they
// were, migration 00180).
func (a RecordedAttempt) Headers() []Header {
	if a.RequestHeaders == nil {
		return nil
	}
	var m map[string]string
	if json.Unmarshal([]byte(*a.RequestHeaders), &m) != nil {
		return nil
	}
	out := make([]Header, 0, len(m))
	for k, v := range m {
		out = append(out, Header{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return strings.ToLower(out[i].Name) < strings.ToLower(out[j].Name) })
	return out
}

// Attempts lists every recorded attempt of the delivery, oldest first. The
// caller has checked that the delivery belongs to webhookID and may be seen.
func Attempts(ctx context.Context, q *gorm.DB, tenantID, webhookID int64, deliveryID string) ([]RecordedAttempt, error) {
	var rs []RecordedAttempt
	err := q.WithContext(ctx).Table("delivery_attempts").
		Select("n, attempted_at, status_code, response_excerpt, duration_ms, error, request_headers").
		Where("tenant_id = ? AND delivery_id = ? AND webhook_id = ?", tenantID, deliveryID, webhookID).
		Order("n").Scan(&rs).Error
	if err != nil {
		return nil, fmt.Errorf("outbox: attempts of delivery %s: %w", deliveryID, err)
	}
	return rs, nil
}

// LiveCount counts the registration's live deliveries (pending or in
// flight).
func LiveCount(ctx context.Context, q *gorm.DB, tenantID, webhookID int64) (int64, error) {
	var n int64
	err := q.WithContext(ctx).Table("deliveries").Where("tenant_id = ? AND webhook_id = ?", tenantID, webhookID).Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("outbox: count live deliveries of webhook %d: %w", webhookID, err)
	}
	return n, nil
}

// Excerpt is the response excerpt, "" when none came.
func (a RecordedAttempt) Excerpt() string {
	if a.ResponseExcerpt == nil {
		return ""
	}
	return *a.ResponseExcerpt
}

// ErrorText is the attempt's error, "" when it succeeded.
func (a RecordedAttempt) ErrorText() string {
	if a.Error == nil {
		return ""
	}
	return *a.Error
}

// Held names one delivery a worker is attempting.
type Held struct {
	TenantID int64
	ID       string
}

// ReleaseOrphans hands back, as due now, every delivery leased to owner
// that is not in held: leases a claim took although its caller never saw
// the rows (the claim's COMMIT was applied but its answer was lost with the
// connection, as when the primary fails over). Without it those rows wait
// for their lease to end. It returns how many it released.
func ReleaseOrphans(ctx context.Context, d *db.DB, owner string, held []Held, now time.Time) (int64, error) {
	q := d.WithContext(ctx).Table("deliveries").
		Where("lease_owner = ? AND status = "+sqlDelivering, owner)
	for _, h := range held {
		q = q.Where("NOT (tenant_id = ? AND id = ?)", h.TenantID, h.ID)
	}
	// What a worker writes when it hands a row back (Finish with a
	// pending update), without the lease check Finish makes per row.
	r := q.Updates(Update{Status: Pending, NextAttemptAt: &now}.columns(now))
	return r.RowsAffected, r.Error
}
