-- The traceparent of the request that caused an event: see the PostgreSQL
-- migration of the same number.

-- +goose Up
ALTER TABLE events ADD COLUMN traceparent TEXT;

-- +goose Down
ALTER TABLE events DROP COLUMN traceparent;
