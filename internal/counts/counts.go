// Package counts reads the per-tenant list totals and id blocks that the
// database keeps with triggers, so that no list request counts or skips
// over the tenant's rows (ARCHITECTURE.md, Lists at scale).
//
// A list's total is one primary-key read of list_counts; a deep page of an
// id-ordered list finds its first row by summing list_blocks (one row per
// 1,024 ids) instead of reading every row before it; acts, listed newest
// first, do the same from the other end with their seq numbers
// (SeekNewest). What is counted is declared once, in counted.Lists: the
// triggers (a generated migration, both dialects) and the statements
// below are generated from it. Adding a filter to a list means adding its
// bucket there, running go generate, and a Key constructor here.
package counts

import (
	"context"
	"fmt"
	"strconv"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/tenant"
)

// Key names one stored total: a list and, for a filtered list, its bucket.
type Key struct {
	Kind   string
	Bucket string
}

// The lists.
var (
	Clients   = Key{Kind: "clients"}
	Templates = Key{Kind: "templates"}
	Users     = Key{Kind: "users"}
	Webhooks  = Key{Kind: "webhooks"}
)

// Acts is the key of the acts list filtered by client and/or status (nil:
// no filter on it).
func Acts(clientID *int64, status *string) Key {
	switch {
	case clientID != nil && status != nil:
		return Key{"acts", "c:" + strconv.FormatInt(*clientID, 10) + ":s:" + *status}
	case clientID != nil:
		return Key{"acts", "c:" + strconv.FormatInt(*clientID, 10)}
	case status != nil:
		return Key{"acts", "s:" + *status}
	}
	return Key{Kind: "acts"}
}

// ClientsIn is the key of the clients of one country (migration 00095).
func ClientsIn(country string) Key { return Key{"clients", "country:" + country} }

// ClientsWithOrg is the key of the clients with one organisation number.
func ClientsWithOrg(orgNumber string) Key { return Key{"clients", "org:" + orgNumber} }

// ActsOfTemplate is the key of the acts of one template version, all or in
// one status (migration 00095).
func ActsOfTemplate(templateID int64, status *string) Key {
	b := "t:" + strconv.FormatInt(templateID, 10)
	if status != nil {
		b += ":s:" + *status
	}
	return Key{"acts", b}
}

// WebhooksOf is the key of the registrations user created.
func WebhooksOf(userID int64) Key { return Key{"webhooks", "u:" + strconv.FormatInt(userID, 10)} }

// Deliveries is the key of a registration's delivery log.
func Deliveries(webhookID int64) Key {
	return Key{"deliveries", "w:" + strconv.FormatInt(webhookID, 10)}
}

// Total returns the stored total of k for the tenant in ctx (0 when the
// tenant has no such rows).
func Total(ctx context.Context, q *gorm.DB, k Key) (int64, error) {
	var n []int64
	err := tenant.Scope(ctx, q.Table("list_counts")).
		Where("kind = ? AND bucket = ?", k.Kind, k.Bucket).Limit(1).Pluck("n", &n).Error
	if err != nil {
		return 0, fmt.Errorf("counts: total of %s %q: %w", k.Kind, k.Bucket, err)
	}
	if len(n) == 0 || n[0] < 0 {
		return 0, nil
	}
	return n[0], nil
}

// BlockSize is the number of ids per list_blocks row (id >> 10).
const BlockSize = 1 << 10

// seekFrom is the offset from which Seek uses the blocks: shallower pages
// skip their rows directly, which costs less than the extra query.
const seekFrom = 2_000

// Seek turns an offset into an id-ordered list of kind (clients, templates,
// users) into a starting id and a small remaining offset: the page is then
// "id >= from ORDER BY id OFFSET skip", which reads at most one block's
// rows before the page instead of offset rows. total is the list's stored
// total (Total), which lets a page past the middle be found from the end.
// ok is false when the offset is at or past the end of the list.
func Seek(ctx context.Context, q *gorm.DB, kind string, offset, total int64) (from, skip int64, ok bool, err error) {
	if offset < seekFrom {
		return 0, offset, true, nil
	}
	block, before, ok, err := seekBlock(ctx, q, kind, offset, total, "ASC")
	return block * BlockSize, offset - before, ok, err
}

// ActBlocks is the list_blocks kind of the acts list, whole or filtered by
// status (migration 00080): blocks of 1024 of the acts' seq numbers.
func ActBlocks(status *string) string {
	if status != nil {
		return "acts:s:" + *status
	}
	return "acts"
}

// TemplateActBlocks is the list_blocks kind of one template's acts
// (migration 00101): blocks of 1024 of their seq numbers.
func TemplateActBlocks(templateID int64) string {
	return "acts:t:" + strconv.FormatInt(templateID, 10)
}

// ClientBlocks is the list_blocks kind of the clients list, whole or of
// one country (migration 00098): blocks of 1024 of the clients' ids.
func ClientBlocks(country *string) string {
	if country != nil {
		return "clients:country:" + *country
	}
	return "clients"
}

// SeekNewest is Seek for a list ordered by its key descending (acts, newest
// first, by seq): the page is "key < below ORDER BY key DESC OFFSET skip"
// (below is 0, meaning no bound, for shallow pages). total is the list's
// stored total, as for Seek.
func SeekNewest(ctx context.Context, q *gorm.DB, kind string, offset, total int64) (below, skip int64, ok bool, err error) {
	if offset < seekFrom {
		return 0, offset, true, nil
	}
	block, before, ok, err := seekBlock(ctx, q, kind, offset, total, "DESC")
	return (block + 1) * BlockSize, offset - before, ok, err
}

// seekBlock finds the block of kind holding the row at offset in the list
// ordered by block (ASC or DESC), and how many rows come before it; ok is
// false past the end of the list. The running sum reads the blocks from
// where the walk starts up to the one it looks for, so a row past the
// middle of the list (by total) is looked for from the other end, as the
// total-1-offset-th row of the reverse order: no seek reads more than half
// of the blocks. At a million rows (977 blocks) the last page's seek read
// all of them (0.7 ms) and was what made that page twice as slow as at
// 10,000 rows; from the end it reads two (0.1 ms). A total that differs
// from the blocks (a write between the two reads) shifts the page by the
// rows written, as reading a moment later would.
func seekBlock(ctx context.Context, q *gorm.DB, kind string, offset, total int64, order string) (block, before int64, ok bool, err error) {
	if offset >= total/2 && offset < total {
		rev := "DESC"
		if order == "DESC" {
			rev = "ASC"
		}
		block, _, cum, ok, err := walkBlocks(ctx, q, kind, total-1-offset, rev)
		if err != nil || ok {
			// The rows before the block in order are those not in it
			// or after it.
			return block, total - cum, ok, err
		}
	}
	block, before, _, ok, err = walkBlocks(ctx, q, kind, offset, order)
	return block, before, ok, err
}

// walkBlocks walks kind's blocks in order (ASC or DESC) to the one holding
// the row at offset: its number, the rows before it and the rows up to
// its end (before plus its own).
func walkBlocks(ctx context.Context, q *gorm.DB, kind string, offset int64, order string) (block, before, cum int64, ok bool, err error) {
	var rows []struct {
		Block  int64
		Before int64
		Cum    int64
	}
	err = q.WithContext(ctx).Raw(`SELECT block, cum - n AS before, cum FROM (
  SELECT block, n, SUM(n) OVER (ORDER BY block `+order+`) AS cum FROM list_blocks WHERE tenant_id = ? AND kind = ? AND n <> 0
) b WHERE cum > ? ORDER BY block `+order+` LIMIT 1`, tenant.ID(ctx), kind, offset).Scan(&rows).Error
	if err != nil {
		return 0, 0, 0, false, fmt.Errorf("counts: seek %s to %d: %w", kind, offset, err)
	}
	if len(rows) == 0 {
		return 0, 0, 0, false, nil
	}
	return rows[0].Block, rows[0].Before, rows[0].Cum, true, nil
}

// truthCounts and truthBlocks (counts.gen.go, generated from
// counted.Lists with the triggers) compute, from the rows themselves, what
// list_counts and list_blocks must hold. Check and Rebuild use them, and
// the triggers are checked against them (statement_internal_test.go: a
// bucket a trigger keeps and the statement lacks fails, and so does the
// reverse).
//
//go:generate go run ./cmd/gencounts

// Mismatch is one stored total that differs from the rows.
type Mismatch struct {
	TenantID int64
	Kind     string
	Bucket   string // for a block: "block:<n>"
	Stored   int64
	Actual   int64
}

func (m Mismatch) String() string {
	return fmt.Sprintf("tenant %d %s %q: stored %d, actual %d", m.TenantID, m.Kind, m.Bucket, m.Stored, m.Actual)
}

type row struct {
	TenantID int64
	Kind     string
	Bucket   string
	N        int64
}

type key struct {
	t    int64
	kind string
	b    string
}

// Check compares every stored total and block with the rows, across
// tenants, and returns the differences (none when the triggers have seen
// every write). It reads whole tables: run it off-peak.
func Check(ctx context.Context, q *gorm.DB) ([]Mismatch, error) {
	return checkAgainst(ctx, q, truthCounts, truthBlocks)
}

// checkAgainst is Check with the statement given.
func checkAgainst(ctx context.Context, q *gorm.DB, truthCounts, truthBlocks string) ([]Mismatch, error) {
	load := func(sql string) (map[key]int64, error) {
		var rows []row
		if err := q.WithContext(ctx).Raw(sql).Scan(&rows).Error; err != nil {
			return nil, err
		}
		m := make(map[key]int64, len(rows))
		for _, r := range rows {
			m[key{r.TenantID, r.Kind, r.Bucket}] += r.N
		}
		return m, nil
	}
	actual, err := load(truthCounts + "\nUNION ALL SELECT tenant_id, kind, 'block:' || block, n FROM (" + truthBlocks + ") b")
	if err != nil {
		return nil, fmt.Errorf("counts: check: %w", err)
	}
	stored, err := load("SELECT tenant_id, kind, bucket, n FROM list_counts UNION ALL SELECT tenant_id, kind, 'block:' || block, n FROM list_blocks")
	if err != nil {
		return nil, fmt.Errorf("counts: check: %w", err)
	}
	var out []Mismatch
	for k, n := range actual {
		if stored[k] != n {
			out = append(out, Mismatch{k.t, k.kind, k.b, stored[k], n})
		}
	}
	for k, n := range stored {
		if _, ok := actual[k]; !ok && n != 0 {
			out = append(out, Mismatch{k.t, k.kind, k.b, n, 0})
		}
	}
	return out, nil
}

// Rebuild recomputes every total and block from the rows, in one
// transaction. On PostgreSQL it takes SHARE locks on the counted tables
// first, so writes wait for it rather than slip between the recount and the
// swap. Run it after loading rows with triggers disabled (pg_restore
// --disable-triggers, session_replication_role = replica), or when Check
// reports differences.
func Rebuild(ctx context.Context, q *gorm.DB, postgres bool) error {
	return q.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if postgres {
			if err := tx.Exec("LOCK TABLE " + joinTables() + " IN SHARE MODE").Error; err != nil {
				return fmt.Errorf("counts: rebuild: lock: %w", err)
			}
		}
		for _, s := range []string{
			"DELETE FROM list_counts",
			"DELETE FROM list_blocks",
			"INSERT INTO list_counts (tenant_id, kind, bucket, n) " + truthCounts,
			"INSERT INTO list_blocks (tenant_id, kind, block, n) " + truthBlocks,
		} {
			if err := tx.Exec(s).Error; err != nil {
				return fmt.Errorf("counts: rebuild: %w", err)
			}
		}
		return nil
	})
}

func joinTables() string {
	s := ""
	for i, t := range counted {
		if i > 0 {
			s += ", "
		}
		s += t
	}
	return s
}
