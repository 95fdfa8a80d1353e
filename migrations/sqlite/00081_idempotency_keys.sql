-- Idempotency keys: the stored result of the first successful
-- POST with a key, per tenant and OAuth app, for 24 hours (internal/idempotency).
-- The key itself is kept only as a SHA-256 digest.

-- +goose Up
CREATE TABLE idempotency_keys (
    tenant_id     INTEGER     NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    client_id     TEXT        NOT NULL,
    key_hash      TEXT        NOT NULL,
    method        TEXT        NOT NULL,
    path          TEXT        NOT NULL,
    request_hash  TEXT        NOT NULL,
    state         TEXT        NOT NULL,
    locked_until  DATETIME    NOT NULL,
    status_code   INTEGER,
    content_type  TEXT,
    location      TEXT,
    body          TEXT,
    created_at    DATETIME    NOT NULL,
    expires_at    DATETIME    NOT NULL,
    PRIMARY KEY (tenant_id, client_id, key_hash),
    CONSTRAINT idempotency_keys_state_check CHECK (state IN ('running', 'done'))
);
CREATE INDEX idempotency_keys_expiry_idx ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;
