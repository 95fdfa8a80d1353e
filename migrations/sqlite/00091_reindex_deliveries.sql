-- As on PostgreSQL (see migrations/postgres/00091): rebuild the queue's
-- indexes once the history has moved out of deliveries.

-- +goose Up
REINDEX deliveries;

-- +goose Down
SELECT 1;
