package acts

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/tenant"
)

// Record appends history entries inside tx, allocating their ids in one
// statement and inserting them in one batch (bulk writes stay a constant
// number of queries). Entries get the tenant, actor and time filled in.
func Record(ctx context.Context, tx *gorm.DB, actor Actor, at time.Time, entries ...HistoryEntry) error {
	if len(entries) == 0 {
		return nil
	}
	tid := tenant.ID(ctx)
	first, err := db.NextIDs(tx, tid, "act_history", len(entries))
	if err != nil {
		return err
	}
	for i := range entries {
		e := &entries[i]
		e.TenantID, e.ID = tid, first+int64(i)
		e.ActorType, e.ActorID, e.ActorUserID = actor.Type, actor.ID, actor.UserID
		if e.At.IsZero() {
			e.At = at.UTC()
		}
	}
	if err := tx.WithContext(ctx).CreateInBatches(entries, 500).Error; err != nil {
		return fmt.Errorf("acts: record %d history entries: %w", len(entries), err)
	}
	return nil
}

// History returns a page of the act's history, oldest first.
func (s *Store) History(ctx context.Context, actUUID uuid.UUID, pg page.Request) (_ []HistoryEntry, total int64, err error) {
	defer apperr.Wrap(&err, "acts.History(%s)", actUUID)
	var n int64
	if err := tenant.Scope(ctx, s.DB.DB.Model(&Act{})).Where("uuid = ?", actUUID).Count(&n).Error; err != nil {
		return nil, 0, err
	}
	if n == 0 {
		return nil, 0, notFound()
	}
	q := tenant.Scope(ctx, s.DB.DB.Model(&HistoryEntry{})).Where("act_uuid = ?", actUUID)
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, err
	}
	var out []HistoryEntry
	if !pg.Beyond(total) {
		if err := q.Order("id").Offset(pg.Offset()).Limit(pg.Limit).Find(&out).Error; err != nil {
			return nil, 0, err
		}
	}
	return out, total, nil
}
