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
    tenant_id     bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    client_id     text NOT NULL,
    user_id       bigint NOT NULL,
    key_hash      text NOT NULL,
    method        text NOT NULL,
    path          text NOT NULL,
    request_hash  text NOT NULL,
    request_id    text NOT NULL,
    status_code   integer NOT NULL,
    content_type  text NOT NULL,
    location      text NOT NULL,
    body          text NOT NULL,
    created_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, client_id, user_id, key_hash)
);
CREATE INDEX idempotency_keys_expiry_idx ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;
CREATE TABLE idempotency_keys (
    tenant_id     bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    client_id     text NOT NULL,
    key_hash      text NOT NULL,
    method        text NOT NULL,
    path          text NOT NULL,
    request_hash  text NOT NULL,
    state         text NOT NULL,
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
