-- Template blocks of acts: see the PostgreSQL migration of the same number.
-- Row triggers, as migration 00080's: one block row per insert and delete,
-- two for an update that changes an act's template, seq or tenant (the
-- store never does). SQLite has no TRUNCATE: a DELETE without WHERE fires
-- the row triggers.

-- +goose Up
-- +goose StatementBegin
CREATE TRIGGER acts_template_block_ins AFTER INSERT ON acts WHEN NEW.seq IS NOT NULL BEGIN
    INSERT INTO list_blocks (tenant_id, kind, block, n) VALUES (NEW.tenant_id, 'acts:t:' || NEW.template_id, NEW.seq >> 10, 1)
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (1);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER acts_template_block_del AFTER DELETE ON acts WHEN OLD.seq IS NOT NULL BEGIN
    INSERT INTO list_blocks (tenant_id, kind, block, n) VALUES (OLD.tenant_id, 'acts:t:' || OLD.template_id, OLD.seq >> 10, -1)
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (-1);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER acts_template_block_upd AFTER UPDATE OF template_id, seq, tenant_id ON acts
    WHEN OLD.template_id IS NOT NEW.template_id OR OLD.seq IS NOT NEW.seq OR OLD.tenant_id IS NOT NEW.tenant_id BEGIN
    INSERT INTO list_blocks (tenant_id, kind, block, n) SELECT OLD.tenant_id, 'acts:t:' || OLD.template_id, OLD.seq >> 10, -1 WHERE OLD.seq IS NOT NULL
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (-1);
    INSERT INTO list_blocks (tenant_id, kind, block, n) SELECT NEW.tenant_id, 'acts:t:' || NEW.template_id, NEW.seq >> 10, 1 WHERE NEW.seq IS NOT NULL
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (1);
END;
-- +goose StatementEnd

INSERT INTO list_blocks (tenant_id, kind, block, n)
SELECT tenant_id, 'acts:t:' || template_id, seq >> 10, count(*) FROM acts GROUP BY tenant_id, template_id, seq >> 10;

-- +goose Down
DROP TRIGGER acts_template_block_upd;
DROP TRIGGER acts_template_block_del;
DROP TRIGGER acts_template_block_ins;
DELETE FROM list_blocks WHERE kind LIKE 'acts:t:%';
