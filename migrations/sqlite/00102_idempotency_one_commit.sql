-- Idempotency keys are written in the transaction of the request they
-- record (internal/idempotency): a row exists only for a request whose outcome
-- committed, so there is no running state and no lease. A key belongs to
-- the tenant, the OAuth app and the user the token acts for. The stored
-- body is sealed (it may hold a secret shown once).
--
-- The rows of the previous table are dropped: their bodies were kept in
-- clear. A retry of a request made before the upgrade runs again.

-- +goose Up
DROP TABLE idempotency_keys;
CREATE TABLE idempotency_keys (
    tenant_id     INTEGER NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    client_id     TEXT NOT NULL,
    user_id       INTEGER NOT NULL,
    key_hash      TEXT NOT NULL,
    method        TEXT NOT NULL,
    path          TEXT NOT NULL,
    request_hash  TEXT NOT NULL,
    request_id    TEXT NOT NULL,
    status_code   INTEGER NOT NULL,
    content_type  TEXT NOT NULL,
    location      TEXT NOT NULL,
    body          TEXT NOT NULL,
    created_at    DATETIME NOT NULL,
    expires_at    DATETIME NOT NULL,
    PRIMARY KEY (tenant_id, client_id, user_id, key_hash)
);
CREATE INDEX idempotency_keys_expiry_idx ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;
CREATE TABLE idempotency_keys (
    tenant_id     INTEGER NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    client_id     TEXT NOT NULL,
    key_hash      TEXT NOT NULL,
    method        TEXT NOT NULL,
    path          TEXT NOT NULL,
    request_hash  TEXT NOT NULL,
    state         TEXT NOT NULL,
    locked_until  DATETIME NOT NULL,
    status_code   INTEGER,
    content_type  TEXT,
    location      TEXT,
    body          TEXT,
    created_at    DATETIME NOT NULL,
    expires_at    DATETIME NOT NULL,
    PRIMARY KEY (tenant_id, client_id, key_hash),
    CONSTRAINT idempotency_keys_state_check CHECK (state IN ('running', 'done'))
);
CREATE INDEX idempotency_keys_expiry_idx ON idempotency_keys (expires_at);
