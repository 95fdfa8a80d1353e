package page

import (
	"context"
	"strconv"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/tenant"
)

// TimeRange is a list's time filter: From keeps the rows at or after it,
// Until those before it; nil does not bound. Every list with a creation
// range (the events, the audit log, a registration's delivery log) applies
// it here, so the range means the same everywhere.
type TimeRange struct {
	From, Until *time.Time
}

// Where keeps q's rows whose column lies in r.
func (r TimeRange) Where(q *gorm.DB, column string) *gorm.DB {
	if r.From != nil {
		q = q.Where(column+" >= ?", r.From.UTC())
	}
	if r.Until != nil {
		q = q.Where(column+" < ?", r.Until.UTC())
	}
	return q
}

// Numbered is a tenant's list read in the order of a number that follows
// commit order, whose times the time_blocks table keeps per block of
// 1<<BlockBits numbers (migration 00210; its triggers name the lists).
type Numbered struct {
	Table  string // the table, also the list's name in time_blocks
	Number string // the column of the number (events.seq, audit_log.id)
	Time   string // the column the range bounds (what the triggers record)
}

// The numbered lists.
var (
	Events   = Numbered{Table: "events", Number: "seq", Time: "occurred_at"}
	AuditLog = Numbered{Table: "audit_log", Number: "id", Time: "occurred_at"}
)

// BlockBits is the triggers' shift: a block of time_blocks holds the
// numbers n with the same n >> BlockBits.
const BlockBits = 10

// WhereNumbered is Where on l's time column for the tenant in ctx (q
// reads l.Table unaliased), plus a bound on l's number that r implies, so
// that an index on (tenant_id, [filter,] number) starts its scan within a
// block of the range instead of at the newest row.
//
// A row's time is not in the order of its number (an event's is chosen by
// its writer, a record's is read from the clock of the replica that wrote
// it), so no row's time can stand for a position. The blocks can: a
// block's min_at and max_at bound the time of every row it ever held
// (only widened by the triggers, never narrowed by a delete). A row with
// time < Until lies in a block whose min_at < Until, so its number is
// below the end of the newest such block; a row with time >= From lies
// in a block whose max_at >= From, so its number is at or above the start
// of the oldest such block. The time predicates stay, so the rows are
// exactly those of the time predicates alone, whatever the disorder. When
// no block qualifies, no row can, and the bound (NULL) keeps none.
//
// The blocks searched start at the block of the tenant's smallest number
// still stored, so the blocks of purged rows cost nothing; a search reads
// at most the list's live blocks (a millionth row is the 977th block),
// from the end nearer its answer.
func (r TimeRange) WhereNumbered(ctx context.Context, q *gorm.DB, l Numbered) *gorm.DB {
	q = r.Where(q, l.Time)
	if r.From == nil && r.Until == nil {
		return q
	}
	tid := tenant.ID(ctx)
	shift := strconv.Itoa(BlockBits)
	live := "b.block >= ((SELECT min(" + l.Number + ") FROM " + l.Table + " WHERE tenant_id = ?) >> " + shift + ")"
	if r.Until != nil {
		q = q.Where(l.Number+" < (SELECT (max(b.block) + 1) << "+shift+" FROM time_blocks b"+
			" WHERE b.tenant_id = ? AND b.list = ? AND b.min_at < ? AND "+live+")",
			tid, l.Table, r.Until.UTC(), tid)
	}
	if r.From != nil {
		q = q.Where(l.Number+" >= (SELECT min(b.block) << "+shift+" FROM time_blocks b"+
			" WHERE b.tenant_id = ? AND b.list = ? AND b.max_at >= ? AND "+live+")",
			tid, l.Table, r.From.UTC(), tid)
	}
	return q
}
