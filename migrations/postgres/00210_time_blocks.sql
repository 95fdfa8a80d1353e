-- Time bounds of the lists numbered in commit order (GET /events by
-- events.seq, GET /audit-log by audit_log.id): time_blocks keeps, per
-- tenant, list and block of 1,024 numbers (number >> 10), the earliest and
-- the latest time of the rows ever written to the block. A row's time is
-- taken apart from its number (an event's by its writer, anywhere in its
-- transaction; a record's from the clock of whichever replica wrote it),
-- so times only nearly follow numbers and cannot stand for them; but every
-- row of a block lies within the block's times, so "time before U" implies
-- "number below the end of the newest block whose earliest time is before
-- U", and "time at or after L" implies "number at or above the start of
-- the oldest block whose latest time is at or after L" (page.TimeRange).
-- The lists add those number bounds to the time bounds, which they keep,
-- so a page whose time bound lies far back starts its index scan within a
-- block of it instead of at the newest row.
--
-- Rows are only ever widened (an insert, or an update of an event, takes
-- the LEAST and GREATEST of the block's times and its rows'); a delete
-- (the retention purge) leaves the block's times as they were, wider than
-- what remains, which is still true of every row that remains. The blocks
-- a writer touches are those of the numbers it was just given, whose
-- id_sequences row it already holds until commit: no new lock order.

-- +goose Up
CREATE TABLE time_blocks (
    tenant_id bigint      NOT NULL,
    list      text        NOT NULL,
    block     bigint      NOT NULL,
    min_at    timestamptz NOT NULL,
    max_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, list, block)
);

-- +goose StatementBegin
CREATE FUNCTION finsvc_time_blocks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'events' THEN
        INSERT INTO time_blocks (tenant_id, list, block, min_at, max_at)
        SELECT tenant_id, 'events', seq >> 10, min(occurred_at), max(occurred_at) FROM new_rows
        WHERE seq IS NOT NULL GROUP BY tenant_id, seq >> 10 ORDER BY 1, 3
        ON CONFLICT (tenant_id, list, block) DO UPDATE SET
            min_at = LEAST(time_blocks.min_at, EXCLUDED.min_at), max_at = GREATEST(time_blocks.max_at, EXCLUDED.max_at);
    ELSE
        INSERT INTO time_blocks (tenant_id, list, block, min_at, max_at)
        SELECT tenant_id, 'audit_log', id >> 10, min(occurred_at), max(occurred_at) FROM new_rows
        GROUP BY tenant_id, id >> 10 ORDER BY 1, 3
        ON CONFLICT (tenant_id, list, block) DO UPDATE SET
            min_at = LEAST(time_blocks.min_at, EXCLUDED.min_at), max_at = GREATEST(time_blocks.max_at, EXCLUDED.max_at);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER events_time_blocks_ins AFTER INSERT ON events REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_time_blocks();
-- The service never updates an event; a hand-written UPDATE of its time or
-- number widens the block it lands in all the same.
CREATE TRIGGER events_time_blocks_upd AFTER UPDATE ON events REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_time_blocks();
-- audit_log refuses UPDATE (migration 00160).
CREATE TRIGGER audit_log_time_blocks_ins AFTER INSERT ON audit_log REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_time_blocks();

-- After the triggers, whose lock keeps writers out until this commits.
INSERT INTO time_blocks (tenant_id, list, block, min_at, max_at)
SELECT tenant_id, 'events', seq >> 10, min(occurred_at), max(occurred_at) FROM events
WHERE seq IS NOT NULL GROUP BY tenant_id, seq >> 10;
INSERT INTO time_blocks (tenant_id, list, block, min_at, max_at)
SELECT tenant_id, 'audit_log', id >> 10, min(occurred_at), max(occurred_at) FROM audit_log
GROUP BY tenant_id, id >> 10;

-- +goose Down
DROP TRIGGER audit_log_time_blocks_ins ON audit_log;
DROP TRIGGER events_time_blocks_upd ON events;
DROP TRIGGER events_time_blocks_ins ON events;
DROP FUNCTION finsvc_time_blocks();
DROP TABLE time_blocks;
