-- OAuth 2.0: apps (OAuth clients), the fosite request
-- tables (authorization codes, access and refresh tokens, PKCE requests),
-- remembered consents and browser login sessions.
--
-- Token tables store the HMAC signature of a token (the part after the dot),
-- never the token itself: a database leak yields nothing usable, because the
-- token also needs the random half that only the holder has. Every key leads
-- with tenant_id; every row of tenant A is invisible to tenant B's queries.

-- +goose Up
CREATE TABLE oauth_clients (
    tenant_id     INTEGER     NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id            TEXT        NOT NULL,            -- client_id, app_<hex>
    name          TEXT        NOT NULL,
    -- lowercase hex SHA-256 of the secret: secrets are 256-bit random, so a
    -- slow hash adds nothing but latency on the token endpoint.
    secret_hash   TEXT        NOT NULL,
    redirect_uris TEXT        NOT NULL,            -- JSON array of strings
    scopes        TEXT        NOT NULL DEFAULT '', -- space-separated
    created_by    INTEGER,                          -- user id; NULL from the CLI
    created_at    DATETIME    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    updated_at    DATETIME    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    PRIMARY KEY (tenant_id, id)
);

-- The four fosite request tables share one shape. user_id is the resource
-- owner; request_id groups a token family (a code, the tokens it yielded and
-- every rotation after), so that reuse revokes the whole family.
CREATE TABLE oauth_codes (
    tenant_id      INTEGER     NOT NULL,
    signature      TEXT        NOT NULL,
    request_id     TEXT        NOT NULL,
    requested_at   DATETIME    NOT NULL,
    client_id      TEXT        NOT NULL,
    user_id        INTEGER     NOT NULL,
    scopes         TEXT        NOT NULL DEFAULT '',
    granted_scopes TEXT        NOT NULL DEFAULT '',
    form_data      TEXT        NOT NULL DEFAULT '',
    session_data   TEXT        NOT NULL DEFAULT '',
    expires_at     DATETIME    NOT NULL,
    active         INTEGER    NOT NULL DEFAULT 1,
    PRIMARY KEY (tenant_id, signature),
    FOREIGN KEY (tenant_id, client_id) REFERENCES oauth_clients (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX oauth_codes_request_idx ON oauth_codes (tenant_id, request_id);

CREATE TABLE oauth_access_tokens (
    tenant_id      INTEGER     NOT NULL,
    signature      TEXT        NOT NULL,
    request_id     TEXT        NOT NULL,
    requested_at   DATETIME    NOT NULL,
    client_id      TEXT        NOT NULL,
    user_id        INTEGER     NOT NULL,
    scopes         TEXT        NOT NULL DEFAULT '',
    granted_scopes TEXT        NOT NULL DEFAULT '',
    form_data      TEXT        NOT NULL DEFAULT '',
    session_data   TEXT        NOT NULL DEFAULT '',
    expires_at     DATETIME    NOT NULL,
    active         INTEGER    NOT NULL DEFAULT 1,
    PRIMARY KEY (tenant_id, signature),
    FOREIGN KEY (tenant_id, client_id) REFERENCES oauth_clients (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX oauth_access_tokens_request_idx ON oauth_access_tokens (tenant_id, request_id);
CREATE INDEX oauth_access_tokens_user_client_idx ON oauth_access_tokens (tenant_id, user_id, client_id);

CREATE TABLE oauth_refresh_tokens (
    tenant_id        INTEGER     NOT NULL,
    signature        TEXT        NOT NULL,
    request_id       TEXT        NOT NULL,
    requested_at     DATETIME    NOT NULL,
    client_id        TEXT        NOT NULL,
    user_id          INTEGER     NOT NULL,
    scopes           TEXT        NOT NULL DEFAULT '',
    granted_scopes   TEXT        NOT NULL DEFAULT '',
    form_data        TEXT        NOT NULL DEFAULT '',
    session_data     TEXT        NOT NULL DEFAULT '',
    expires_at       DATETIME    NOT NULL,
    active           INTEGER    NOT NULL DEFAULT 1,
    access_signature TEXT        NOT NULL DEFAULT '', -- the access token issued with it
    PRIMARY KEY (tenant_id, signature),
    FOREIGN KEY (tenant_id, client_id) REFERENCES oauth_clients (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX oauth_refresh_tokens_request_idx ON oauth_refresh_tokens (tenant_id, request_id);
CREATE INDEX oauth_refresh_tokens_user_client_idx ON oauth_refresh_tokens (tenant_id, user_id, client_id);

CREATE TABLE oauth_pkce (
    tenant_id      INTEGER     NOT NULL,
    signature      TEXT        NOT NULL,
    request_id     TEXT        NOT NULL,
    requested_at   DATETIME    NOT NULL,
    client_id      TEXT        NOT NULL,
    user_id        INTEGER     NOT NULL,
    scopes         TEXT        NOT NULL DEFAULT '',
    granted_scopes TEXT        NOT NULL DEFAULT '',
    form_data      TEXT        NOT NULL DEFAULT '',
    session_data   TEXT        NOT NULL DEFAULT '',
    expires_at     DATETIME    NOT NULL,
    active         INTEGER    NOT NULL DEFAULT 1,
    PRIMARY KEY (tenant_id, signature),
    FOREIGN KEY (tenant_id, client_id) REFERENCES oauth_clients (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);

-- A user's remembered consent to an app: later requests for a subset of
-- these scopes skip the consent page.
CREATE TABLE oauth_consents (
    tenant_id  INTEGER     NOT NULL,
    user_id    INTEGER     NOT NULL,
    client_id  TEXT        NOT NULL,
    scopes     TEXT        NOT NULL DEFAULT '',
    created_at DATETIME    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    updated_at DATETIME    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    PRIMARY KEY (tenant_id, user_id, client_id),
    FOREIGN KEY (tenant_id, client_id) REFERENCES oauth_clients (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);

-- Browser sessions of the login, consent and developer pages. id_hash is
-- the SHA-256 of the cookie value; the cookie alone is useless elsewhere.
CREATE TABLE web_sessions (
    tenant_id  INTEGER     NOT NULL,
    id_hash    TEXT        NOT NULL,
    user_id    INTEGER     NOT NULL,
    expires_at DATETIME    NOT NULL,
    created_at DATETIME    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    PRIMARY KEY (tenant_id, id_hash),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE web_sessions;
DROP TABLE oauth_consents;
DROP TABLE oauth_pkce;
DROP TABLE oauth_refresh_tokens;
DROP TABLE oauth_access_tokens;
DROP TABLE oauth_codes;
DROP TABLE oauth_clients;
