-- Webhooks and the durable outbox: registrations, events, and one delivery
-- row per (event, registration), written in the business transaction. The
-- deliveries table doubles as the delivery log.

-- +goose Up
CREATE TABLE webhooks (
    tenant_id                  INTEGER      NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id                         INTEGER      NOT NULL,
    event                      TEXT        NOT NULL,
    target                     TEXT        NOT NULL,
    active                     BOOLEAN     NOT NULL DEFAULT true,
    -- Signing secrets must be usable for HMAC, so they are stored encrypted
    -- (AES-GCM under a key derived from FINSVC_SECRET), never raw.
    secret_ciphertext          TEXT        NOT NULL,
    previous_secret_ciphertext TEXT,
    previous_secret_expires_at DATETIME,
    created_by_user_id         INTEGER      NOT NULL,
    created_by_client_id       TEXT,
    disabled_reason            TEXT,
    created_at                 DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    updated_at                 DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX webhooks_event_idx ON webhooks (tenant_id, event) WHERE active = 1;

CREATE TABLE events (
    tenant_id   INTEGER      NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id          TEXT        NOT NULL,
    kind        TEXT        NOT NULL,
    -- The envelope's data object, as JSON TEXT; the envelope is rebuilt per
    -- attempt from id, kind, occurred_at and this.
    payload     TEXT        NOT NULL,
    occurred_at DATETIME NOT NULL,
    -- Deliveries stop retrying after this (act.fetch_data: the request's
    -- expires_at); NULL means the normal schedule.
    expires_at  DATETIME,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE deliveries (
    tenant_id        INTEGER      NOT NULL,
    id               TEXT        NOT NULL,
    webhook_id       INTEGER      NOT NULL,
    event_id         TEXT        NOT NULL,
    -- pending | delivering | succeeded | failed | cancelled
    status           TEXT        NOT NULL DEFAULT 'pending',
    attempts         INTEGER     NOT NULL DEFAULT 0,
    next_attempt_at  DATETIME,
    lease_owner      TEXT,
    lease_expires_at DATETIME,
    last_status_code INTEGER,
    last_error       TEXT,
    response_excerpt TEXT,
    last_attempt_at  DATETIME,
    created_at       DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    updated_at       DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
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
