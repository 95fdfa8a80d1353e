-- Idempotency keys: the stored result of the first successful
-- POST with a key, per tenant and OAuth app, for 24 hours (internal/idempotency).
-- The key itself is kept only as a SHA-256 digest.

-- +goose Up
CREATE TABLE idempotency_keys (
    tenant_id     bigint      NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    client_id     text        NOT NULL,
    key_hash      text        NOT NULL,
    method        text        NOT NULL,
    path          text        NOT NULL,
    request_hash  text        NOT NULL,
    state         text        NOT NULL,
    locked_until  timestamptz NOT NULL,
    status_code   integer,
    content_type  text,
    location      text,
    body          text,
    created_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, client_id, key_hash),
    CONSTRAINT idempotency_keys_state_check CHECK (state IN ('running', 'done'))
);
CREATE INDEX idempotency_keys_expiry_idx ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;
