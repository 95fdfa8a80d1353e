package sealing

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/keyring"
)

// Column is one sealed column, declared by the package that owns its table
// (registry.SealedColumns, idempotency.SealedColumns): what `finsvc secret
// reseal` rewrites and `finsvc secret status` counts.
type Column struct {
	Table, Name string
	// Keys are the primary key's columns; AD receives their values (as
	// text, in this order) and returns the value's additional data.
	Keys    []string
	AD      func(keys []string) []byte
	Purpose string // NewFor's purpose ("" is the webhook secrets' key)
}

func (c Column) String() string { return c.Table + "." + c.Name }

// LegacyKeyID is how Status names values sealed before the key ring.
const LegacyKeyID = "legacy"

// Count is the number of values of one column sealed under one key.
type Count struct {
	Column Column
	KeyID  string // a key id, or LegacyKeyID
	N      int64
}

// Status counts the sealed values of each column per key id.
func Status(ctx context.Context, gdb *gorm.DB, cols []Column) ([]Count, error) {
	var out []Count
	for _, c := range cols {
		var rows []struct {
			K string
			N int64
		}
		q := fmt.Sprintf(`SELECT CASE WHEN %[1]s LIKE '%[3]s%%' THEN substr(%[1]s, %[4]d, %[5]d) ELSE '%[6]s' END AS k, count(*) AS n
FROM %[2]s WHERE %[1]s IS NOT NULL GROUP BY 1 ORDER BY 1`, c.Name, c.Table, keyed, len(keyed)+1, keyring.IDLen, LegacyKeyID)
		if err := gdb.WithContext(ctx).Raw(q).Scan(&rows).Error; err != nil {
			return nil, fmt.Errorf("sealing: status of %s: %w", c, err)
		}
		for _, r := range rows {
			out = append(out, Count{Column: c, KeyID: r.K, N: r.N})
		}
	}
	return out, nil
}

// Progress reports a committed batch of Reseal.
type Progress struct {
	Column   Column
	Resealed int64 // in this column so far
	Failed   int64 // values that did not open (left as they are)
}

// ErrNotResealed means some values did not open under any key of the ring
// (Reseal left them as they were and went on).
var ErrNotResealed = errors.New("sealing: some sealed values did not open")

// Reseal rewrites every sealed value of cols not yet under the ring's
// current key, in batches of batch rows, each batch in a transaction of its
// own: it can be interrupted at any point and run again, and it resumes
// where it stopped (what is left is exactly what is not under the current
// key). A row changed meanwhile (a secret rotated by its owner) is left to
// its writer, which sealed it under the current key anyway. progress, if
// not nil, is called after each batch.
func Reseal(ctx context.Context, gdb *gorm.DB, ring *keyring.Ring, cols []Column, batch int, progress func(Progress)) error {
	if batch <= 0 {
		return errors.New("sealing: the batch size must be positive")
	}
	failed := false
	for _, c := range cols {
		box, err := NewFor(ring, cmpOr(c.Purpose, info))
		if err != nil {
			return err
		}
		p := Progress{Column: c}
		for {
			seen, n, bad, err := resealBatch(ctx, gdb, box, c, batch, p.Failed)
			if err != nil {
				return fmt.Errorf("sealing: reseal %s: %w", c, err)
			}
			p.Resealed += n
			p.Failed += bad
			if progress != nil && (n > 0 || bad > 0) {
				progress(p)
			}
			if seen == 0 {
				break
			}
		}
		failed = failed || p.Failed > 0
	}
	if failed {
		return ErrNotResealed
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// resealBatch reseals up to batch values of c not under the current key,
// skipping the first skip of them (those that failed to open before: they
// sort first among what is left, since every value before them was
// resealed). It returns how many it read, how many were rewritten and how
// many did not open.
func resealBatch(ctx context.Context, gdb *gorm.DB, box *Box, c Column, batch int, skip int64) (seen, n, bad int64, err error) {
	keys := strings.Join(c.Keys, ", ")
	q := fmt.Sprintf(`SELECT %s, %s FROM %s WHERE %s IS NOT NULL AND %s NOT LIKE ? ORDER BY %s LIMIT ? OFFSET ?`,
		keys, c.Name, c.Table, c.Name, c.Name, keys)
	err = gdb.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		rows, err := tx.Raw(q, box.CurrentPrefix()+"%", batch, skip).Rows()
		if err != nil {
			return err
		}
		type item struct {
			keys   []any
			sealed string
		}
		var items []item
		for rows.Next() {
			vals := make([]any, len(c.Keys)+1)
			ptrs := make([]any, len(vals))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return err
			}
			items = append(items, item{keys: vals[:len(c.Keys)], sealed: text(vals[len(c.Keys)])})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		seen = int64(len(items))
		where := make([]string, len(c.Keys))
		for i, k := range c.Keys {
			where[i] = k + " = ?"
		}
		upd := fmt.Sprintf("UPDATE %s SET %s = ? WHERE %s AND %s = ?", c.Table, c.Name, strings.Join(where, " AND "), c.Name)
		for _, it := range items {
			ks := make([]string, len(it.keys))
			for i, v := range it.keys {
				ks[i] = text(v)
			}
			out, changed, err := box.Reseal(it.sealed, c.AD(ks))
			if err != nil {
				bad++
				continue
			}
			if !changed {
				continue
			}
			args := append(append([]any{out}, it.keys...), it.sealed)
			res := tx.Exec(upd, args...)
			if res.Error != nil {
				return res.Error
			}
			n += res.RowsAffected
		}
		return nil
	})
	return seen, n, bad, err
}

// text renders a scanned column value as the text AD expects.
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case []byte:
		return string(v)
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}
