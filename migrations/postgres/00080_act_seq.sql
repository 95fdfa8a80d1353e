-- Deep pages of acts by an index, not by skipping.
--
-- Acts are listed newest first. created_at has no dense key to seek by, so
-- a deep page had to skip every index entry before it. seq is the act's
-- creation number within its tenant (1, 2, 3, … in the order the database
-- inserted them), assigned by the database on every insert, a COPY
-- included, from id_sequences ('acts.seq'). The list is ordered by seq
-- descending, and list_blocks counts acts per block of 1024 seq numbers for
-- the whole list (kind 'acts') and per status ('acts:s:<status>'), so a deep
-- page sums a few hundred block counts and seeks, as the id-ordered lists
-- do (migration 00060). Lists filtered by client stay on OFFSET over their
-- index: one client's acts are few.

-- +goose Up
ALTER TABLE acts ADD COLUMN seq bigint;
UPDATE acts a SET seq = o.rn
FROM (SELECT tenant_id, uuid, row_number() OVER (PARTITION BY tenant_id ORDER BY created_at, uuid) AS rn FROM acts) o
WHERE a.tenant_id = o.tenant_id AND a.uuid = o.uuid;
INSERT INTO id_sequences (tenant_id, name, next_id)
SELECT tenant_id, 'acts.seq', max(seq) + 1 FROM acts GROUP BY tenant_id;
ALTER TABLE acts ALTER COLUMN seq SET NOT NULL;
CREATE UNIQUE INDEX acts_seq_idx ON acts (tenant_id, seq);
CREATE INDEX acts_status_seq_idx ON acts (tenant_id, status, seq);
CREATE INDEX acts_client_seq_idx ON acts (tenant_id, client_id, seq);
DROP INDEX acts_list_idx;
DROP INDEX acts_status_list_idx;

-- +goose StatementBegin
CREATE FUNCTION finsvc_block_acts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO list_blocks (tenant_id, kind, block, n)
        SELECT tenant_id, k, b, sum(d) FROM (
            SELECT tenant_id, 'acts' AS k, seq >> 10 AS b, 1 AS d FROM new_rows
            UNION ALL SELECT tenant_id, 'acts:s:' || status, seq >> 10, 1 FROM new_rows
        ) x GROUP BY tenant_id, k, b ORDER BY tenant_id, k, b
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = list_blocks.n + EXCLUDED.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO list_blocks (tenant_id, kind, block, n)
        SELECT tenant_id, k, b, sum(d) FROM (
            SELECT tenant_id, 'acts' AS k, seq >> 10 AS b, -1 AS d FROM old_rows
            UNION ALL SELECT tenant_id, 'acts:s:' || status, seq >> 10, -1 FROM old_rows
        ) x GROUP BY tenant_id, k, b ORDER BY tenant_id, k, b
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = list_blocks.n + EXCLUDED.n;
    ELSE
        INSERT INTO list_blocks (tenant_id, kind, block, n)
        SELECT tenant_id, k, b, sum(d) FROM (
            SELECT tenant_id, 'acts' AS k, seq >> 10 AS b, -1 AS d FROM old_rows
            UNION ALL SELECT tenant_id, 'acts:s:' || status, seq >> 10, -1 FROM old_rows
            UNION ALL SELECT tenant_id, 'acts', seq >> 10, 1 FROM new_rows
            UNION ALL SELECT tenant_id, 'acts:s:' || status, seq >> 10, 1 FROM new_rows
        ) x GROUP BY tenant_id, k, b HAVING sum(d) <> 0 ORDER BY tenant_id, k, b
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = list_blocks.n + EXCLUDED.n;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER acts_block_ins AFTER INSERT ON acts REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_block_acts();
CREATE TRIGGER acts_block_del AFTER DELETE ON acts REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_block_acts();
CREATE TRIGGER acts_block_upd AFTER UPDATE ON acts REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_block_acts();
-- TRUNCATE: acts_count_trunc forgets kind 'acts'; these the per-status ones.
CREATE TRIGGER acts_block_trunc_draft AFTER TRUNCATE ON acts
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_truncate('acts:s:draft');
CREATE TRIGGER acts_block_trunc_final AFTER TRUNCATE ON acts
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_truncate('acts:s:final');

INSERT INTO list_blocks (tenant_id, kind, block, n)
SELECT tenant_id, 'acts', seq >> 10, count(*) FROM acts GROUP BY tenant_id, seq >> 10
UNION ALL SELECT tenant_id, 'acts:s:' || status, seq >> 10, count(*) FROM acts GROUP BY tenant_id, status, seq >> 10;

-- +goose Down
DELETE FROM list_blocks WHERE kind = 'acts' OR kind LIKE 'acts:%';
DROP TRIGGER acts_block_trunc_final ON acts;
DROP TRIGGER acts_block_trunc_draft ON acts;
DROP TRIGGER acts_block_upd ON acts;
DROP TRIGGER acts_block_del ON acts;
DROP TRIGGER acts_block_ins ON acts;
DROP FUNCTION finsvc_block_acts();
CREATE INDEX acts_list_idx ON acts (tenant_id, created_at DESC, uuid DESC);
CREATE INDEX acts_status_list_idx ON acts (tenant_id, status, created_at DESC, uuid DESC);
DROP INDEX acts_client_seq_idx;
DROP INDEX acts_status_seq_idx;
DROP INDEX acts_seq_idx;
DELETE FROM id_sequences WHERE name = 'acts.seq';
ALTER TABLE acts DROP COLUMN seq;
