// Package tenant holds the tenant model, the request-context accessors, and
// the single query helper that scopes every query to the current tenant
// (Hydra's nid pattern). No store may query a tenant-owned table without it.
package tenant

import (
	"context"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Tenant is one organization, addressed by its subdomain slug.
type Tenant struct {
	ID        int64     `gorm:"primaryKey;autoIncrement" json:"id"`
	Slug      string    `gorm:"uniqueIndex;not null" json:"slug"`
	Name      string    `gorm:"not null" json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

type ctxKey struct{}

// NewContext returns ctx carrying t.
func NewContext(ctx context.Context, t *Tenant) context.Context {
	return context.WithValue(ctx, ctxKey{}, t)
}

// FromContext returns the tenant in ctx, if any.
func FromContext(ctx context.Context) (*Tenant, bool) {
	t, ok := ctx.Value(ctxKey{}).(*Tenant)
	return t, ok && t != nil
}

// MustFromContext returns the tenant in ctx and panics when there is none:
// reaching tenant-scoped code without a tenant is a wiring bug, never input.
func MustFromContext(ctx context.Context) *Tenant {
	t, ok := FromContext(ctx)
	if !ok {
		panic("tenant: no tenant in context")
	}
	return t
}

// ID returns the current tenant's id (panics without one, see MustFromContext).
func ID(ctx context.Context) int64 { return MustFromContext(ctx).ID }

// Scope returns db bound to ctx and restricted to the current tenant's rows
// of the statement's table: WHERE <table>.tenant_id = ?. The column is
// qualified with the current table so that joins stay unambiguous.
func Scope(ctx context.Context, db *gorm.DB) *gorm.DB {
	tid := ID(ctx)
	return db.WithContext(ctx).Where(clause.Eq{
		Column: clause.Column{Table: clause.CurrentTable, Name: "tenant_id"},
		Value:  tid,
	})
}
