-- The request headers each attempt sent: see the PostgreSQL migration of
-- the same number.

-- +goose Up
ALTER TABLE delivery_attempts ADD COLUMN request_headers TEXT;

-- +goose Down
ALTER TABLE delivery_attempts DROP COLUMN request_headers;
