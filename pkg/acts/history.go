package acts

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/pkg/db"
	"github.com/finsvc/finsvc/pkg/tenant"
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
