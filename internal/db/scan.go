package db

import (
	"errors"

	"gorm.io/gorm"
)

// ScanAll runs q (built with GORM as usual: tenant.Scope, Select of the
// columns, Where, Order) and scans every row into a T through dest, which
// returns pointers to T's fields in the order of q's Select.
//
// It is for hot reads of many rows: GORM's own scan (scanIntoStruct) finds
// and sets each column of each row by reflection, which for an act of 200
// data points cost more than the query itself (BENCHMARKS.md, "Load"). The
// statement, its placeholders and its tenant scope are still GORM's, so the
// query is the same on both dialects and counts as one query.
func ScanAll[T any](q *gorm.DB, capacity int, dest func(*T) []any) ([]T, error) {
	rows, err := q.Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]T, 0, capacity)
	for rows.Next() {
		out = append(out, *new(T))
		if err := rows.Scan(dest(&out[len(out)-1])...); err != nil {
			return nil, err
		}
	}
	return out, rows.Err()
}

// ErrNoRows is ScanOne's answer when q found nothing.
var ErrNoRows = errors.New("db: no rows")

// ScanOne is ScanAll for at most one row (add Limit(1) to q): ErrNoRows
// when there is none.
func ScanOne(q *gorm.DB, dest ...any) error {
	rows, err := q.Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return ErrNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	return rows.Close()
}
