-- Notify every replica when a bearer check's answer may have changed, so
-- that their short-lived token caches (internal/authcache) drop what they hold:
-- an access token revoked or deleted (revocation, refresh-token reuse,
-- app or consent removal, cascades), a user's role changed or a user
-- deleted. Statement-level: one notification per statement, no payload.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION finsvc_notify_auth_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('finsvc_auth_changed', '');
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER oauth_access_tokens_auth_changed
    AFTER UPDATE OR DELETE OR TRUNCATE ON oauth_access_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_notify_auth_changed();
CREATE TRIGGER users_auth_changed
    AFTER UPDATE OF role OR DELETE OR TRUNCATE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_notify_auth_changed();

-- +goose Down
DROP TRIGGER users_auth_changed ON users;
DROP TRIGGER oauth_access_tokens_auth_changed ON oauth_access_tokens;
DROP FUNCTION finsvc_notify_auth_changed();
