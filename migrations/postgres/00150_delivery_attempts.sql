-- Every HTTP attempt of a delivery, kept: the deliveries row (live or in
-- delivery_history) holds only the latest outcome and its retry count,
-- which a redelivery starts again at 0; without this table the earlier
-- attempts' answers were lost. The outbox writes a row in the same
-- statement (or transaction) that records the attempt's outcome on the
-- delivery, so an attempt is listed exactly when its outcome is recorded.
--
-- A delivery moves between deliveries and delivery_history, so no foreign
-- key can name it; its attempts go with its event (retention purges an
-- event once its deliveries are gone) or its registration.

-- +goose Up
CREATE TABLE delivery_attempts (
    tenant_id        bigint      NOT NULL,
    delivery_id      uuid        NOT NULL,
    -- 1, 2, … per delivery, across redeliveries.
    n                integer     NOT NULL,
    webhook_id       bigint      NOT NULL,
    event_id         uuid        NOT NULL,
    attempted_at     timestamptz NOT NULL,
    -- NULL when no response came.
    status_code      integer,
    response_excerpt text,
    duration_ms      integer     NOT NULL DEFAULT 0,
    error            text,
    PRIMARY KEY (tenant_id, delivery_id, n),
    FOREIGN KEY (tenant_id, event_id) REFERENCES events (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, webhook_id) REFERENCES webhooks (tenant_id, id) ON DELETE CASCADE
);
-- The cascades from events and webhooks, and a registration's attempts by time.
CREATE INDEX delivery_attempts_event_idx ON delivery_attempts (tenant_id, event_id);
CREATE INDEX delivery_attempts_webhook_idx ON delivery_attempts (tenant_id, webhook_id, attempted_at);

-- +goose Down
DROP TABLE delivery_attempts;
