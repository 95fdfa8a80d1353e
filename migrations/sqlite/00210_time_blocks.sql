-- Time bounds of the lists numbered in commit order: see the PostgreSQL
-- migration of the same number. Row triggers; min() and max() of the
-- stored values compare as the lists' "occurred_at < ?" does (the same
-- DATETIME affinity, text as stored), so a block's times bound its rows'
-- under the comparison the lists make.

-- +goose Up
CREATE TABLE time_blocks (
    tenant_id INTEGER  NOT NULL,
    list      TEXT     NOT NULL,
    block     INTEGER  NOT NULL,
    min_at    DATETIME NOT NULL,
    max_at    DATETIME NOT NULL,
    PRIMARY KEY (tenant_id, list, block)
) WITHOUT ROWID;

-- +goose StatementBegin
CREATE TRIGGER events_time_blocks_ins AFTER INSERT ON events WHEN NEW.seq IS NOT NULL BEGIN
    INSERT INTO time_blocks (tenant_id, list, block, min_at, max_at)
        VALUES (NEW.tenant_id, 'events', NEW.seq >> 10, NEW.occurred_at, NEW.occurred_at)
        ON CONFLICT (tenant_id, list, block) DO UPDATE SET
            min_at = min(min_at, excluded.min_at), max_at = max(max_at, excluded.max_at);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER events_time_blocks_upd AFTER UPDATE OF occurred_at, seq, tenant_id ON events WHEN NEW.seq IS NOT NULL BEGIN
    INSERT INTO time_blocks (tenant_id, list, block, min_at, max_at)
        VALUES (NEW.tenant_id, 'events', NEW.seq >> 10, NEW.occurred_at, NEW.occurred_at)
        ON CONFLICT (tenant_id, list, block) DO UPDATE SET
            min_at = min(min_at, excluded.min_at), max_at = max(max_at, excluded.max_at);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER audit_log_time_blocks_ins AFTER INSERT ON audit_log BEGIN
    INSERT INTO time_blocks (tenant_id, list, block, min_at, max_at)
        VALUES (NEW.tenant_id, 'audit_log', NEW.id >> 10, NEW.occurred_at, NEW.occurred_at)
        ON CONFLICT (tenant_id, list, block) DO UPDATE SET
            min_at = min(min_at, excluded.min_at), max_at = max(max_at, excluded.max_at);
END;
-- +goose StatementEnd

INSERT INTO time_blocks (tenant_id, list, block, min_at, max_at)
SELECT tenant_id, 'events', seq >> 10, min(occurred_at), max(occurred_at) FROM events
WHERE seq IS NOT NULL GROUP BY tenant_id, seq >> 10;
INSERT INTO time_blocks (tenant_id, list, block, min_at, max_at)
SELECT tenant_id, 'audit_log', id >> 10, min(occurred_at), max(occurred_at) FROM audit_log
GROUP BY tenant_id, id >> 10;

-- +goose Down
DROP TRIGGER audit_log_time_blocks_ins;
DROP TRIGGER events_time_blocks_upd;
DROP TRIGGER events_time_blocks_ins;
DROP TABLE time_blocks;
