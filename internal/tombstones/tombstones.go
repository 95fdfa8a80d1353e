// Package tombstones keeps what an incremental sync needs to learn of a
// deletion: a deleted client or act leaves a tombstone, written in the
// deleting transaction by the store that deletes (migration 00097). Its
// DeletedAt is a stamp of the list the row left (db.Stamp), so tombstones
// page like updated_since does, in commit order, without a miss or a
// repeat. Tombstones are kept for Retention and then purged by the
// retention janitor; a client that has not synced for longer must copy the
// list again (README, Incremental sync).
package tombstones

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/tenant"
)

// Retention is how long a tombstone is kept: long enough for an
// integration that syncs daily or weekly to survive a long outage, short
// enough that the table stays a small fraction of what was deleted.
const Retention = 90 * 24 * time.Hour

// The lists that leave tombstones (their db.Stamp list names).
const (
	Clients = "clients"
	Acts    = "acts"
)

// Tombstone records one deleted row.
type Tombstone struct {
	TenantID int64  `gorm:"primaryKey;autoIncrement:false"`
	List     string `gorm:"primaryKey"`
	// ID is the deleted row's id as text: a client's number, an act's uuid.
	ID string `gorm:"column:id;primaryKey"`
	// ClientID is a deleted act's client (nil for a client).
	ClientID  *int64
	DeletedAt time.Time `gorm:"not null"`
}

// TableName pins the table.
func (Tombstone) TableName() string { return "tombstones" }

// Record writes, in the deleting transaction tx, the tombstone of row id
// of list, deleted at at (a db.Stamp of list). A row deleted again (an
// import that brought it back) moves its tombstone to the new time.
func Record(ctx context.Context, tx *gorm.DB, list, id string, clientID *int64, at time.Time) error {
	t := Tombstone{TenantID: tenant.ID(ctx), List: list, ID: id, ClientID: clientID, DeletedAt: at}
	err := tx.Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "tenant_id"}, {Name: "list"}, {Name: "id"}},
		DoUpdates: clause.AssignmentColumns([]string{"client_id", "deleted_at"}),
	}).Create(&t).Error
	if err != nil {
		return fmt.Errorf("tombstones: record %s %s: %w", list, id, err)
	}
	return nil
}

// List returns a page of list's tombstones deleted strictly after since
// (all when nil), ordered by (deleted_at, id), and their total, counted
// over tombstones_deleted_idx: as many index entries as deletions since,
// at most Retention's worth.
func List(ctx context.Context, q *gorm.DB, list string, since *time.Time, p page.Request) (_ []Tombstone, total int64, err error) {
	defer apperr.Wrap(&err, "tombstones.List(%s)", list)
	if err := p.Validate(); err != nil {
		return nil, 0, err
	}
	where := func() *gorm.DB {
		w := tenant.Scope(ctx, q.Model(&Tombstone{})).Where("list = ?", list)
		if since != nil {
			w = w.Where("deleted_at > ?", since.UTC().Truncate(time.Microsecond))
		}
		return w
	}
	if err := where().Count(&total).Error; err != nil {
		return nil, 0, err
	}
	out := []Tombstone{}
	if p.Beyond(total) {
		return out, total, nil
	}
	err = where().Order("deleted_at, id").Limit(p.Limit).Offset(p.Offset()).Find(&out).Error
	return out, total, err
}

// Purge deletes, across tenants, up to batch tombstones older than before.
// Replicas may purge at once: on PostgreSQL each skips the rows another
// has locked.
func Purge(ctx context.Context, d *db.DB, before time.Time, batch int) (int64, error) {
	lock := ""
	if d.Dialect == db.Postgres {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	res := d.WithContext(ctx).Exec(`DELETE FROM tombstones WHERE (tenant_id, list, id) IN (
  SELECT tenant_id, list, id FROM tombstones WHERE deleted_at < ? ORDER BY deleted_at LIMIT ?`+lock+`)`, before.UTC(), batch)
	if res.Error != nil {
		return 0, fmt.Errorf("tombstones: purge: %w", res.Error)
	}
	return res.RowsAffected, nil
}
