-- The OAuth janitor (internal/oauth/janitor.go) deletes expired rows across
-- tenants every few minutes in small batches; without these it scans whole
-- token tables each run. One extra index per token write is the price.

-- +goose Up
CREATE INDEX oauth_codes_expires_idx ON oauth_codes (expires_at);
CREATE INDEX oauth_pkce_expires_idx ON oauth_pkce (expires_at);
CREATE INDEX oauth_access_tokens_expires_idx ON oauth_access_tokens (expires_at);
CREATE INDEX oauth_refresh_tokens_expires_idx ON oauth_refresh_tokens (expires_at);
CREATE INDEX web_sessions_expires_idx ON web_sessions (expires_at);

-- +goose Down
DROP INDEX web_sessions_expires_idx;
DROP INDEX oauth_refresh_tokens_expires_idx;
DROP INDEX oauth_access_tokens_expires_idx;
DROP INDEX oauth_pkce_expires_idx;
DROP INDEX oauth_codes_expires_idx;
