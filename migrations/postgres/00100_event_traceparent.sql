-- Tracing: the W3C traceparent of the request that caused an
-- event, so that each delivery attempt continues that trace and sends it to
-- the receiver. NULL when the request was not traced (tracing off) or the
-- event predates this column.

-- +goose Up
ALTER TABLE events ADD COLUMN traceparent text;

-- +goose Down
ALTER TABLE events DROP COLUMN traceparent;
