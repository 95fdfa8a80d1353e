package tenant

import (
	"context"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/db"
)

// A Query is a read of tenant data written as SQL (db.Query) for a hot
// path, scoped as Scope scopes the queries GORM builds: its first
// placeholder is the tenant ("… WHERE tenant_id = ? AND …"), and One
// supplies the current tenant's id there. Scope and Query are the two ways
// a query reaches tenant data.
type Query struct{ q db.Query }

// NewQuery prepares sqlText; it panics (at start-up: queries are package
// variables) unless the first placeholder is a tenant_id condition.
func NewQuery(sqlText string) Query {
	i := strings.IndexByte(sqlText, '?')
	if i < 0 || !strings.HasSuffix(strings.TrimRight(sqlText[:i], " "), "tenant_id =") {
		panic(fmt.Sprintf("tenant.NewQuery: the first placeholder must be tenant_id = ?: %q", sqlText))
	}
	return Query{db.NewQuery(sqlText)}
}

// PostgresText is q as pgx runs it, the tenant's id its first parameter
// (db.Query.PostgresText).
func (q Query) PostgresText() string { return q.q.PostgresText() }

// One runs q for the tenant of ctx on h (a handle or a transaction), with
// args for the placeholders after the tenant's, and scans the first row
// into dest: db.ErrNoRows when there is none.
func (q Query) One(ctx context.Context, h *gorm.DB, args []any, dest ...any) error {
	return q.q.One(ctx, h, append([]any{ID(ctx)}, args...), dest...)
}

// All runs q for the tenant of ctx on h with args for the placeholders after
// the tenant's, and scans every row into a T through dest (db.QueryAll).
func All[T any](ctx context.Context, h *gorm.DB, q Query, args []any, capacity int, dest func(*T) []any) ([]T, error) {
	return db.QueryAll(ctx, h, q.q, append([]any{ID(ctx)}, args...), capacity, dest)
}
