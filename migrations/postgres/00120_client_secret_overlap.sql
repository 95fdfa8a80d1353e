-- Rotating an app's client secret keeps the previous one valid for a
-- window the admin chooses (default 24 h, down to none), so that running
-- integrations can switch without an outage. The previous secret is kept
-- as the same digest as the current one (lowercase hex SHA-256), never
-- readable; one previous secret at most: rotating again replaces it.

-- +goose Up
ALTER TABLE oauth_clients ADD COLUMN previous_secret_hash text NOT NULL DEFAULT '';
ALTER TABLE oauth_clients ADD COLUMN previous_secret_expires_at timestamptz;

-- +goose Down
ALTER TABLE oauth_clients DROP COLUMN previous_secret_expires_at;
ALTER TABLE oauth_clients DROP COLUMN previous_secret_hash;
