-- Migration 00050 notified every replica on every UPDATE or DELETE
-- statement on oauth_access_tokens, whatever it touched. Only a change to a
-- token a cache may still hold needs one: a token cache never serves a
-- token past its expiry (internal/authcache), so the deletion of an expired
-- token (a refresh after expiry, the purge of expired tokens) revokes
-- nothing and now notifies nobody. Each such notification costs the
-- committing transaction PostgreSQL's cluster-wide notify lock and empties
-- every replica's cache.
--
-- "Live" keeps a minute's margin past expires_at, so that a replica whose
-- clock runs behind the database's still hears of it; now() is the
-- transaction's start, which only widens what counts as live. A statement
-- that changes no row notifies nobody either. TRUNCATE has no transition
-- table and keeps the unconditional notification; so do the users'
-- triggers.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION finsvc_notify_live_tokens_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM changed_tokens WHERE expires_at > now() - interval '1 minute') THEN
        PERFORM pg_notify('finsvc_auth_changed', '');
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
DROP TRIGGER oauth_access_tokens_auth_changed ON oauth_access_tokens;
-- A trigger with a transition table takes one event: one trigger each.
CREATE TRIGGER oauth_access_tokens_deleted
    AFTER DELETE ON oauth_access_tokens REFERENCING OLD TABLE AS changed_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_notify_live_tokens_changed();
CREATE TRIGGER oauth_access_tokens_updated
    AFTER UPDATE ON oauth_access_tokens REFERENCING OLD TABLE AS changed_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_notify_live_tokens_changed();
CREATE TRIGGER oauth_access_tokens_truncated
    AFTER TRUNCATE ON oauth_access_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_notify_auth_changed();

-- +goose Down
DROP TRIGGER oauth_access_tokens_truncated ON oauth_access_tokens;
DROP TRIGGER oauth_access_tokens_updated ON oauth_access_tokens;
DROP TRIGGER oauth_access_tokens_deleted ON oauth_access_tokens;
DROP FUNCTION finsvc_notify_live_tokens_changed();
CREATE TRIGGER oauth_access_tokens_auth_changed
    AFTER UPDATE OR DELETE OR TRUNCATE ON oauth_access_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_notify_auth_changed();
