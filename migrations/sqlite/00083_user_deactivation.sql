-- Users can be deactivated: see the PostgreSQL migration of the same
-- number (SQLite has no token cache to notify).

-- +goose Up
ALTER TABLE users ADD COLUMN deactivated_at DATETIME;

-- +goose Down
ALTER TABLE users DROP COLUMN deactivated_at;
