-- Every HTTP attempt of a delivery, kept: see the PostgreSQL migration of
-- the same number.

-- +goose Up
CREATE TABLE delivery_attempts (
    tenant_id        INTEGER  NOT NULL,
    delivery_id      TEXT     NOT NULL,
    n                INTEGER  NOT NULL,
    webhook_id       INTEGER  NOT NULL,
    event_id         TEXT     NOT NULL,
    attempted_at     DATETIME NOT NULL,
    status_code      INTEGER,
    response_excerpt TEXT,
    duration_ms      INTEGER  NOT NULL DEFAULT 0,
    error            TEXT,
    PRIMARY KEY (tenant_id, delivery_id, n),
    FOREIGN KEY (tenant_id, event_id) REFERENCES events (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, webhook_id) REFERENCES webhooks (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX delivery_attempts_event_idx ON delivery_attempts (tenant_id, event_id);
CREATE INDEX delivery_attempts_webhook_idx ON delivery_attempts (tenant_id, webhook_id, attempted_at);

-- +goose Down
DROP TABLE delivery_attempts;
