-- One-time passwords. A generated password (POST /users without one, the
-- console's invitation, `finsvc user create`, an admin's new one-time
-- password) works for one sign-in until password_expires_at (72 h);
-- that sign-in consumes it and sets password_change_required, and the user
-- must choose a password before anything else. A password the user chose
-- has neither.

-- +goose Up
ALTER TABLE users ADD COLUMN password_expires_at timestamptz;
ALTER TABLE users ADD COLUMN password_change_required boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE users DROP COLUMN password_change_required;
ALTER TABLE users DROP COLUMN password_expires_at;
