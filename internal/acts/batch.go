package acts

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/tenant"
)

// Batch writes. A bulk PUT of n fields must cost a constant number of
// statements, not n, on both dialects. Neither has a portable UPDATE … FROM
// (VALUES …) (SQLite's UPDATE FROM exists but needs column typing games on
// PostgreSQL), so each batch is one UPDATE whose SET columns are CASE
// expressions keyed by the row's id:
//
//	UPDATE data_points SET value = CASE id WHEN ? THEN ? … END, …
//	WHERE tenant_id = ? AND id IN (…)
//
// One statement, one round trip, 2 parameters per row and column: well below
// PostgreSQL's 65,535 and SQLite's 32,766 parameters for the at most 1,000
// items a request may carry.

// dpWrite is one data point change: the new value, whether the stored
// source value follows it (a provider or integration result) and whether the
// revision increments (the value changed).
type dpWrite struct {
	ID        int64
	Value     *string
	SetSource bool
	Bump      bool
}

// caseBuilder accumulates "CASE <key> WHEN ? THEN ? … ELSE <else> END".
type caseBuilder struct {
	key  string
	sql  strings.Builder
	args []any
	n    int
}

func newCase(key string) *caseBuilder {
	c := &caseBuilder{key: key}
	c.sql.WriteString("CASE " + key)
	return c
}

func (c *caseBuilder) when(id int64, v any) {
	c.sql.WriteString(" WHEN ? THEN ?")
	c.args = append(c.args, id, v)
	c.n++
}

// expr ends the CASE; rows not listed keep elseSQL (a column or literal).
func (c *caseBuilder) expr(elseSQL string) any {
	return gorm.Expr(c.sql.String()+" ELSE "+elseSQL+" END", c.args...)
}

// updateDataPoints applies ws in one UPDATE.
func updateDataPoints(ctx context.Context, tx *gorm.DB, ws []dpWrite, now time.Time) error {
	if len(ws) == 0 {
		return nil
	}
	ids := make([]int64, len(ws))
	value, source, rev, updated := newCase("id"), newCase("id"), newCase("id"), newCase("id")
	for i, w := range ws {
		ids[i] = w.ID
		value.when(w.ID, w.Value)
		if w.SetSource {
			source.when(w.ID, w.Value)
		}
		if w.Bump {
			rev.when(w.ID, 1)
			updated.when(w.ID, now)
		}
	}
	set := map[string]any{"value": value.expr("value")}
	if source.n > 0 {
		set["source_value"] = source.expr("source_value")
	}
	// Each CASE costs a scan of its WHEN list per row, so columns that change
	// the same way on every row get a plain expression instead (the usual
	// case: every correlated value bumps its revision).
	switch {
	case rev.n == len(ws):
		set["revision"] = gorm.Expr("revision + 1")
		set["updated_at"] = now
	case rev.n > 0:
		set["revision"] = gorm.Expr("revision + ?", rev.expr("0"))
		set["updated_at"] = updated.expr("updated_at")
	}
	res := tenant.Scope(ctx, tx.Table("data_points")).Where("id IN ?", ids).Updates(set)
	if res.Error != nil {
		return fmt.Errorf("acts: update %d data points: %w", len(ws), res.Error)
	}
	if res.RowsAffected != int64(len(ws)) {
		return fmt.Errorf("acts: updated %d data points, want %d", res.RowsAffected, len(ws))
	}
	return nil
}

// fieldWrite is one field state change within a request.
type fieldWrite struct {
	DataPointID int64
	State       FieldState
	ResultValue *string // set for accepted
	Error       *string // set for failed
}

// updateFields applies ws to the fields of request id in one UPDATE.
func updateFields(ctx context.Context, tx *gorm.DB, requestID uuid.UUID, ws []fieldWrite, now time.Time) error {
	if len(ws) == 0 {
		return nil
	}
	ids := make([]int64, len(ws))
	state, result, errc := newCase("data_point_id"), newCase("data_point_id"), newCase("data_point_id")
	uniform := true
	for i, w := range ws {
		ids[i] = w.DataPointID
		uniform = uniform && w.State == ws[0].State
		state.when(w.DataPointID, w.State)
		if w.ResultValue != nil {
			result.when(w.DataPointID, *w.ResultValue)
		}
		if w.Error != nil {
			errc.when(w.DataPointID, *w.Error)
		}
	}
	set := map[string]any{"state": state.expr("state"), "updated_at": now}
	if uniform {
		set["state"] = ws[0].State
	}
	if result.n > 0 {
		set["result_value"] = result.expr("result_value")
	}
	if errc.n > 0 {
		set["error"] = errc.expr("error")
	}
	res := tenant.Scope(ctx, tx.Table("fetch_request_fields")).
		Where("fetch_request_id = ? AND data_point_id IN ?", requestID, ids).Updates(set)
	if res.Error != nil {
		return fmt.Errorf("acts: update %d request fields: %w", len(ws), res.Error)
	}
	if res.RowsAffected != int64(len(ws)) {
		return fmt.Errorf("acts: updated %d request fields, want %d", res.RowsAffected, len(ws))
	}
	return nil
}
