-- Webhooks and the durable outbox: registrations, events, and one delivery
-- row per (event, registration), written in the business transaction. The
-- deliveries table doubles as the delivery log.

-- +goose Up
CREATE TABLE webhooks (
    tenant_id                  bigint      NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id                         bigint      NOT NULL,
    event                      text        NOT NULL,
    target                     text        NOT NULL,
    active                     boolean     NOT NULL DEFAULT true,
    -- Signing secrets must be usable for HMAC, so they are stored encrypted
    -- (AES-GCM under a key derived from FINSVC_SECRET), never raw.
    secret_ciphertext          text        NOT NULL,
    previous_secret_ciphertext text,
    previous_secret_expires_at timestamptz,
    created_by_user_id         bigint      NOT NULL,
    created_by_client_id       text,
    disabled_reason            text,
    created_at                 timestamptz NOT NULL DEFAULT now(),
    updated_at                 timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX webhooks_event_idx ON webhooks (tenant_id, event) WHERE active;

CREATE TABLE events (
    tenant_id   bigint      NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id          uuid        NOT NULL,
    kind        text        NOT NULL,
    -- The envelope's data object, as JSON text; the envelope is rebuilt per
    -- attempt from id, kind, occurred_at and this.
    payload     text        NOT NULL,
    occurred_at timestamptz NOT NULL,
    -- Deliveries stop retrying after this (act.fetch_data: the request's
    -- expires_at); NULL means the normal schedule.
    expires_at  timestamptz,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE deliveries (
    tenant_id        bigint      NOT NULL,
    id               uuid        NOT NULL,
    webhook_id       bigint      NOT NULL,
    event_id         uuid        NOT NULL,
    -- pending | delivering | succeeded | failed | cancelled
    status           text        NOT NULL DEFAULT 'pending',
    attempts         integer     NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz,
    lease_owner      text,
    lease_expires_at timestamptz,
    last_status_code integer,
    last_error       text,
    response_excerpt text,
    last_attempt_at  timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT deliveries_status_check CHECK (status IN ('pending', 'delivering', 'succeeded', 'failed', 'cancelled')),
    CONSTRAINT deliveries_event_webhook_key UNIQUE (tenant_id, event_id, webhook_id),
    FOREIGN KEY (tenant_id, event_id) REFERENCES events (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, webhook_id) REFERENCES webhooks (tenant_id, id) ON DELETE CASCADE
);
-- Workers claim across tenants by due time; only live rows are indexed.
CREATE INDEX deliveries_due_idx ON deliveries (next_attempt_at) WHERE status IN ('pending', 'delivering');
CREATE INDEX deliveries_webhook_idx ON deliveries (tenant_id, webhook_id, created_at DESC);

-- +goose Down
DROP TABLE deliveries;
DROP TABLE events;
DROP TABLE webhooks;
