-- One-time passwords: see the PostgreSQL migration of the same number.

-- +goose Up
ALTER TABLE users ADD COLUMN password_expires_at DATETIME;
ALTER TABLE users ADD COLUMN password_change_required INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE users DROP COLUMN password_change_required;
ALTER TABLE users DROP COLUMN password_expires_at;
