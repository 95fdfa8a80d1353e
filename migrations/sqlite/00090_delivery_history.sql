-- As on PostgreSQL (see migrations/postgres/00090): deliveries keeps the
-- live queue, delivery_history the finished deliveries, delivery_log both.
-- SQLite cannot change deliveries' CHECK in place; the outbox package is
-- the one writer of both tables and keeps final statuses out of deliveries.

-- +goose Up
CREATE TABLE delivery_history (
    tenant_id        INTEGER     NOT NULL,
    id               TEXT        NOT NULL,
    webhook_id       INTEGER     NOT NULL,
    event_id         TEXT        NOT NULL,
    status           TEXT        NOT NULL,
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
    CONSTRAINT delivery_history_status_check CHECK (status IN ('succeeded', 'failed', 'cancelled')),
    CONSTRAINT delivery_history_event_webhook_key UNIQUE (tenant_id, event_id, webhook_id),
    FOREIGN KEY (tenant_id, event_id) REFERENCES events (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, webhook_id) REFERENCES webhooks (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX delivery_history_webhook_idx ON delivery_history (tenant_id, webhook_id, created_at DESC);
CREATE INDEX delivery_history_finished_idx ON delivery_history (updated_at);

-- +goose StatementBegin
CREATE TRIGGER delivery_history_count_ins AFTER INSERT ON delivery_history BEGIN
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'deliveries', 'w:' || NEW.webhook_id, 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER delivery_history_count_del AFTER DELETE ON delivery_history BEGIN
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'deliveries', 'w:' || OLD.webhook_id, -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
END;
-- +goose StatementEnd

INSERT INTO delivery_history SELECT * FROM deliveries WHERE status IN ('succeeded', 'failed', 'cancelled');
DELETE FROM deliveries WHERE status IN ('succeeded', 'failed', 'cancelled');
DROP INDEX deliveries_finished_idx;

CREATE VIEW delivery_log AS
    SELECT * FROM deliveries UNION ALL SELECT * FROM delivery_history;

-- +goose Down
DROP VIEW delivery_log;
CREATE INDEX deliveries_finished_idx ON deliveries (updated_at)
    WHERE status IN ('succeeded', 'failed', 'cancelled');
INSERT INTO deliveries SELECT * FROM delivery_history;
DELETE FROM delivery_history;
DROP TABLE delivery_history;
