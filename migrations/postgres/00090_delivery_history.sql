-- The live queue apart from the history, so that the outbox claim stays
-- fast however long the delivered history grows. deliveries keeps only live rows (pending,
-- delivering); a delivery moves to delivery_history, in the statement that
-- records its final status, and back when it is redelivered. The claim
-- updates the rows it takes, and a claim changes status, so no update is
-- HOT: each claimed row was inserted into every index of deliveries, and
-- with 1,000,000 delivered rows in the table three of those indexes spanned
-- the history (50-68 MB each, one B-tree level deeper, out of
-- shared_buffers with the heap). EXPLAIN (ANALYZE, BUFFERS) of one claim of
-- 32 rows at 1M delivered: ~930 buffers, ~740 of them in the UPDATE's own
-- index insertions. Now the claim's table and indexes are as large as the
-- queue, whatever the history.
--
-- delivery_log is the delivery log as a whole (both tables), for reads.
-- The list counts ('deliveries', 'w:<webhook_id>') count both tables: a
-- move is one row out of one and into the other.

-- +goose Up
CREATE TABLE delivery_history (
    tenant_id        bigint      NOT NULL,
    id               uuid        NOT NULL,
    webhook_id       bigint      NOT NULL,
    event_id         uuid        NOT NULL,
    status           text        NOT NULL,
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
    CONSTRAINT delivery_history_status_check CHECK (status IN ('succeeded', 'failed', 'cancelled')),
    CONSTRAINT delivery_history_event_webhook_key UNIQUE (tenant_id, event_id, webhook_id),
    FOREIGN KEY (tenant_id, event_id) REFERENCES events (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, webhook_id) REFERENCES webhooks (tenant_id, id) ON DELETE CASCADE
);
-- The delivery log of a registration, newest first (as deliveries_webhook_idx).
CREATE INDEX delivery_history_webhook_idx ON delivery_history (tenant_id, webhook_id, created_at DESC);
-- Retention purges the oldest finished rows first (was deliveries_finished_idx).
CREATE INDEX delivery_history_finished_idx ON delivery_history (updated_at);

-- +goose StatementBegin
-- TRUNCATE of either table: the other's rows still count.
CREATE FUNCTION finsvc_count_deliveries_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM list_counts WHERE kind = 'deliveries';
    INSERT INTO list_counts (tenant_id, kind, bucket, n)
    SELECT tenant_id, 'deliveries', 'w:' || webhook_id, count(*) FROM (
        SELECT tenant_id, webhook_id FROM deliveries
        UNION ALL SELECT tenant_id, webhook_id FROM delivery_history
    ) x GROUP BY tenant_id, webhook_id;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER delivery_history_count_ins AFTER INSERT ON delivery_history REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_deliveries();
CREATE TRIGGER delivery_history_count_del AFTER DELETE ON delivery_history REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_deliveries();
CREATE TRIGGER delivery_history_count_trunc AFTER TRUNCATE ON delivery_history
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_deliveries_truncate();
DROP TRIGGER deliveries_count_trunc ON deliveries;
CREATE TRIGGER deliveries_count_trunc AFTER TRUNCATE ON deliveries
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_deliveries_truncate();

-- Existing finished rows move (the triggers: +n, then -n).
INSERT INTO delivery_history SELECT * FROM deliveries WHERE status IN ('succeeded', 'failed', 'cancelled');
DELETE FROM deliveries WHERE status IN ('succeeded', 'failed', 'cancelled');
DROP INDEX deliveries_finished_idx;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check CHECK (status IN ('pending', 'delivering'));

CREATE VIEW delivery_log AS
    SELECT * FROM deliveries UNION ALL SELECT * FROM delivery_history;

-- +goose Down
DROP VIEW delivery_log;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check CHECK (status IN ('pending', 'delivering', 'succeeded', 'failed', 'cancelled'));
CREATE INDEX deliveries_finished_idx ON deliveries (updated_at)
    WHERE status IN ('succeeded', 'failed', 'cancelled');
INSERT INTO deliveries SELECT * FROM delivery_history;
DELETE FROM delivery_history;
DROP TRIGGER deliveries_count_trunc ON deliveries;
CREATE TRIGGER deliveries_count_trunc AFTER TRUNCATE ON deliveries
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_truncate('deliveries');
DROP TABLE delivery_history;
DROP FUNCTION finsvc_count_deliveries_truncate();
