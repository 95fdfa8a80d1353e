-- Deep pages of acts by an index, not by skipping: see the PostgreSQL
-- migration of the same number. SQLite cannot add a NOT NULL column
-- without a default, so a trigger refuses an act without its seq instead.

-- +goose Up
ALTER TABLE acts ADD COLUMN seq INTEGER;
UPDATE acts SET seq = o.rn
FROM (SELECT tenant_id, uuid, row_number() OVER (PARTITION BY tenant_id ORDER BY created_at, uuid) AS rn FROM acts) o
WHERE acts.tenant_id = o.tenant_id AND acts.uuid = o.uuid;
INSERT INTO id_sequences (tenant_id, name, next_id)
SELECT tenant_id, 'acts.seq', max(seq) + 1 FROM acts GROUP BY tenant_id;
CREATE UNIQUE INDEX acts_seq_idx ON acts (tenant_id, seq);
CREATE INDEX acts_status_seq_idx ON acts (tenant_id, status, seq);
CREATE INDEX acts_client_seq_idx ON acts (tenant_id, client_id, seq);
DROP INDEX acts_list_idx;
DROP INDEX acts_status_list_idx;

INSERT INTO list_blocks (tenant_id, kind, block, n)
SELECT tenant_id, 'acts', seq >> 10, count(*) FROM acts GROUP BY tenant_id, seq >> 10
UNION ALL SELECT tenant_id, 'acts:s:' || status, seq >> 10, count(*) FROM acts GROUP BY tenant_id, status, seq >> 10;

-- +goose StatementBegin
CREATE TRIGGER acts_seq_required BEFORE INSERT ON acts WHEN NEW.seq IS NULL BEGIN
    SELECT RAISE(ABORT, 'NOT NULL constraint failed: acts.seq');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER acts_block_ins AFTER INSERT ON acts WHEN NEW.seq IS NOT NULL BEGIN
    INSERT INTO list_blocks (tenant_id, kind, block, n) VALUES (NEW.tenant_id, 'acts', NEW.seq >> 10, 1)
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (1);
    INSERT INTO list_blocks (tenant_id, kind, block, n) VALUES (NEW.tenant_id, 'acts:s:' || NEW.status, NEW.seq >> 10, 1)
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (1);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER acts_block_del AFTER DELETE ON acts WHEN OLD.seq IS NOT NULL BEGIN
    INSERT INTO list_blocks (tenant_id, kind, block, n) VALUES (OLD.tenant_id, 'acts', OLD.seq >> 10, -1)
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (-1);
    INSERT INTO list_blocks (tenant_id, kind, block, n) VALUES (OLD.tenant_id, 'acts:s:' || OLD.status, OLD.seq >> 10, -1)
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (-1);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER acts_block_upd AFTER UPDATE OF seq, status ON acts
WHEN OLD.seq IS NOT NEW.seq OR OLD.status IS NOT NEW.status BEGIN
    INSERT INTO list_blocks (tenant_id, kind, block, n) SELECT OLD.tenant_id, 'acts', OLD.seq >> 10, -1 WHERE OLD.seq IS NOT NULL
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (-1);
    INSERT INTO list_blocks (tenant_id, kind, block, n) SELECT OLD.tenant_id, 'acts:s:' || OLD.status, OLD.seq >> 10, -1 WHERE OLD.seq IS NOT NULL
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (-1);
    INSERT INTO list_blocks (tenant_id, kind, block, n) SELECT NEW.tenant_id, 'acts', NEW.seq >> 10, 1 WHERE NEW.seq IS NOT NULL
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (1);
    INSERT INTO list_blocks (tenant_id, kind, block, n) SELECT NEW.tenant_id, 'acts:s:' || NEW.status, NEW.seq >> 10, 1 WHERE NEW.seq IS NOT NULL
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (1);
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER acts_block_upd;
DROP TRIGGER acts_block_del;
DROP TRIGGER acts_block_ins;
DROP TRIGGER acts_seq_required;
DELETE FROM list_blocks WHERE kind = 'acts' OR kind LIKE 'acts:%';
CREATE INDEX acts_list_idx ON acts (tenant_id, created_at DESC, uuid DESC);
CREATE INDEX acts_status_list_idx ON acts (tenant_id, status, created_at DESC, uuid DESC);
DROP INDEX acts_client_seq_idx;
DROP INDEX acts_status_seq_idx;
DROP INDEX acts_seq_idx;
DELETE FROM id_sequences WHERE name = 'acts.seq';
ALTER TABLE acts DROP COLUMN seq;
