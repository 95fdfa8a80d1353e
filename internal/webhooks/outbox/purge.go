package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/finsvc/finsvc/internal/db"
)

// PurgeDeliveries deletes up to batch deliveries of every tenant that
// finished (succeeded, failed or cancelled) before before, and returns how
// many went. Pending and in-flight deliveries are never purged. On
// PostgreSQL the batch skips rows another replica's purge (or a redelivery)
// holds. Finished deliveries are the rows of delivery_history
// (delivery_history_finished_idx serves the order).
func PurgeDeliveries(ctx context.Context, d *db.DB, before time.Time, batch int) (int64, error) {
	lock := ""
	if d.Dialect == db.Postgres {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	res := d.WithContext(ctx).Exec(`DELETE FROM delivery_history WHERE (tenant_id, id) IN (
  SELECT tenant_id, id FROM delivery_history WHERE updated_at < ?
  ORDER BY updated_at LIMIT ?`+lock+`)`, before, batch)
	if res.Error != nil {
		return 0, fmt.Errorf("outbox: purge deliveries: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// PurgeEvents deletes up to batch events of every tenant that occurred
// before before and have no delivery left (all purged, or none was ever
// due), and returns how many went.
func PurgeEvents(ctx context.Context, d *db.DB, before time.Time, batch int) (int64, error) {
	lock := ""
	if d.Dialect == db.Postgres {
		lock = " FOR UPDATE OF e SKIP LOCKED"
	}
	res := d.WithContext(ctx).Exec(`DELETE FROM events WHERE (tenant_id, id) IN (
  SELECT e.tenant_id, e.id FROM events e WHERE e.occurred_at < ?
    AND NOT EXISTS (SELECT 1 FROM deliveries x WHERE x.tenant_id = e.tenant_id AND x.event_id = e.id)
    AND NOT EXISTS (SELECT 1 FROM delivery_history x WHERE x.tenant_id = e.tenant_id AND x.event_id = e.id)
  ORDER BY e.occurred_at LIMIT ?`+lock+`)`, before, batch)
	if res.Error != nil {
		return 0, fmt.Errorf("outbox: purge events: %w", res.Error)
	}
	return res.RowsAffected, nil
}
