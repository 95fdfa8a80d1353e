-- Deep pages of the acts list filtered by template alone: list_blocks of
-- kind 'acts:t:<template_id>' count each template's acts per block of 1,024
-- seq numbers, as 'acts' and 'acts:s:<status>' do (migration 00080), so
-- counts.SeekNewest finds page N of one template without OFFSET over
-- acts_template_seq_idx. The store never changes an act's template, but the
-- update trigger moves blocks anyway (HAVING sum(d) <> 0: only updates that
-- change template_id, seq or tenant_id touch list_blocks), so a hand-written
-- UPDATE cannot leave them wrong. TRUNCATE clears them by pattern, as
-- migration 00099 does for the country blocks.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION finsvc_block_template_acts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO list_blocks (tenant_id, kind, block, n)
        SELECT tenant_id, 'acts:t:' || template_id, seq >> 10, count(*) FROM new_rows
        GROUP BY tenant_id, template_id, seq >> 10 ORDER BY 1, 2, 3
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = list_blocks.n + EXCLUDED.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO list_blocks (tenant_id, kind, block, n)
        SELECT tenant_id, 'acts:t:' || template_id, seq >> 10, -count(*) FROM old_rows
        GROUP BY tenant_id, template_id, seq >> 10 ORDER BY 1, 2, 3
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = list_blocks.n + EXCLUDED.n;
    ELSE
        INSERT INTO list_blocks (tenant_id, kind, block, n)
        SELECT tenant_id, k, b, sum(d) FROM (
            SELECT tenant_id, 'acts:t:' || template_id AS k, seq >> 10 AS b, -1 AS d FROM old_rows
            UNION ALL SELECT tenant_id, 'acts:t:' || template_id, seq >> 10, 1 FROM new_rows
        ) x GROUP BY tenant_id, k, b HAVING sum(d) <> 0 ORDER BY 1, 2, 3
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = list_blocks.n + EXCLUDED.n;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION finsvc_template_act_blocks_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM list_blocks WHERE kind LIKE 'acts:t:%';
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER acts_template_block_ins AFTER INSERT ON acts REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_block_template_acts();
CREATE TRIGGER acts_template_block_del AFTER DELETE ON acts REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_block_template_acts();
CREATE TRIGGER acts_template_block_upd AFTER UPDATE ON acts REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_block_template_acts();
CREATE TRIGGER acts_template_block_trunc AFTER TRUNCATE ON acts
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_template_act_blocks_truncate();

INSERT INTO list_blocks (tenant_id, kind, block, n)
SELECT tenant_id, 'acts:t:' || template_id, seq >> 10, count(*) FROM acts GROUP BY tenant_id, template_id, seq >> 10;

-- +goose Down
DROP TRIGGER acts_template_block_trunc ON acts;
DROP TRIGGER acts_template_block_upd ON acts;
DROP TRIGGER acts_template_block_del ON acts;
DROP TRIGGER acts_template_block_ins ON acts;
DROP FUNCTION finsvc_template_act_blocks_truncate();
DROP FUNCTION finsvc_block_template_acts();
DELETE FROM list_blocks WHERE kind LIKE 'acts:t:%';
