package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/finsvc/finsvc/pkg/db"
)

// sqlFinal lists the final statuses as SQL literals, so that PostgreSQL
// matches the partial index deliveries_finished_idx (migration 00061).
const sqlFinal = "('" + string(Succeeded) + "', '" + string(Failed) + "', '" + string(Cancelled) + "')"

// PurgeDeliveries deletes up to batch deliveries of every tenant that
// finished (succeeded, failed or cancelled) before before, and returns how
// many went. Pending and in-flight deliveries are never purged. On
// PostgreSQL the batch skips rows another replica's purge (or a redelivery)
// holds.
func PurgeDeliveries(ctx context.Context, d *db.DB, before time.Time, batch int) (int64, error) {
	lock := ""
	if d.Dialect == db.Postgres {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	res := d.WithContext(ctx).Exec(`DELETE FROM deliveries WHERE (tenant_id, id) IN (
  SELECT tenant_id, id FROM deliveries WHERE status IN `+sqlFinal+` AND updated_at < ?
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
  ORDER BY e.occurred_at LIMIT ?`+lock+`)`, before, batch)
	if res.Error != nil {
		return 0, fmt.Errorf("outbox: purge events: %w", res.Error)
	}
	return res.RowsAffected, nil
}
