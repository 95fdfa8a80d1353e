-- Rotation with overlap: see the PostgreSQL migration of the same number.

-- +goose Up
ALTER TABLE oauth_clients ADD COLUMN previous_secret_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE oauth_clients ADD COLUMN previous_secret_expires_at DATETIME;

-- +goose Down
ALTER TABLE oauth_clients DROP COLUMN previous_secret_expires_at;
ALTER TABLE oauth_clients DROP COLUMN previous_secret_hash;
