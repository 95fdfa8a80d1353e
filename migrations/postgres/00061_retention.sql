-- Retention (FINSVC_EVENT_RETENTION): the janitor deletes finished
-- deliveries, then events left without deliveries, and expired fetch
-- requests, oldest first, in batches. These indexes let each batch start at
-- the oldest rows instead of scanning the tables.

-- +goose Up
CREATE INDEX deliveries_finished_idx ON deliveries (updated_at)
    WHERE status IN ('succeeded', 'failed', 'cancelled');
CREATE INDEX events_occurred_idx ON events (occurred_at);
CREATE INDEX fetch_requests_expires_idx ON fetch_requests (expires_at);

-- +goose Down
DROP INDEX fetch_requests_expires_idx;
DROP INDEX events_occurred_idx;
DROP INDEX deliveries_finished_idx;
