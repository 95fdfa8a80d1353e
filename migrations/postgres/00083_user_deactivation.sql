-- Users can be deactivated (DELETE /api/1.0/users/{id}): the
-- row stays (history, webhook registrations and audit name it), sign-in and
-- bearer checks refuse it, and its tokens are revoked. A deactivation must
-- reach every replica's token cache at once, like a role change.

-- +goose Up
ALTER TABLE users ADD COLUMN deactivated_at timestamptz;
DROP TRIGGER users_auth_changed ON users;
CREATE TRIGGER users_auth_changed
    AFTER UPDATE OF role, deactivated_at OR DELETE OR TRUNCATE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_notify_auth_changed();

-- +goose Down
DROP TRIGGER users_auth_changed ON users;
CREATE TRIGGER users_auth_changed
    AFTER UPDATE OF role OR DELETE OR TRUNCATE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_notify_auth_changed();
ALTER TABLE users DROP COLUMN deactivated_at;
