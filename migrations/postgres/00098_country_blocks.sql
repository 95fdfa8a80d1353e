-- Deep pages of the clients list filtered by country, at any size:
-- list_blocks of kind 'clients:country:<XX>' count each country's clients
-- per block of 1,024 ids, as 'clients' does for the whole list (migration
-- 00060), so counts.Seek finds page N of one country without OFFSET over
-- clients_country_idx. Inserts and deletes add and remove a row's block;
-- an update moves it between countries (only the updates that change the
-- country, or the id, touch list_blocks: HAVING sum(d) <> 0).

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION finsvc_count_clients() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO list_counts (tenant_id, kind, bucket, n)
        SELECT tenant_id, 'clients', b, sum(d) FROM (
            SELECT tenant_id, '' AS b, 1 AS d FROM new_rows
            UNION ALL SELECT tenant_id, 'country:' || country, 1 FROM new_rows
            UNION ALL SELECT tenant_id, 'org:' || org_number, 1 FROM new_rows
        ) x GROUP BY tenant_id, b ORDER BY tenant_id, b
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = list_counts.n + EXCLUDED.n;
        INSERT INTO list_blocks (tenant_id, kind, block, n)
        SELECT tenant_id, 'clients', id >> 10, count(*) FROM new_rows GROUP BY tenant_id, id >> 10 ORDER BY 1, 3
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = list_blocks.n + EXCLUDED.n;
        INSERT INTO list_blocks (tenant_id, kind, block, n)
        SELECT tenant_id, 'clients:country:' || country, id >> 10, count(*) FROM new_rows
        GROUP BY tenant_id, country, id >> 10 ORDER BY 1, 2, 3
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = list_blocks.n + EXCLUDED.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO list_counts (tenant_id, kind, bucket, n)
        SELECT tenant_id, 'clients', b, sum(d) FROM (
            SELECT tenant_id, '' AS b, -1 AS d FROM old_rows
            UNION ALL SELECT tenant_id, 'country:' || country, -1 FROM old_rows
            UNION ALL SELECT tenant_id, 'org:' || org_number, -1 FROM old_rows
        ) x GROUP BY tenant_id, b ORDER BY tenant_id, b
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = list_counts.n + EXCLUDED.n;
        INSERT INTO list_blocks (tenant_id, kind, block, n)
        SELECT tenant_id, 'clients', id >> 10, -count(*) FROM old_rows GROUP BY tenant_id, id >> 10 ORDER BY 1, 3
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = list_blocks.n + EXCLUDED.n;
        INSERT INTO list_blocks (tenant_id, kind, block, n)
        SELECT tenant_id, 'clients:country:' || country, id >> 10, -count(*) FROM old_rows
        GROUP BY tenant_id, country, id >> 10 ORDER BY 1, 2, 3
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = list_blocks.n + EXCLUDED.n;
    ELSE
        INSERT INTO list_counts (tenant_id, kind, bucket, n)
        SELECT tenant_id, 'clients', b, sum(d) FROM (
            SELECT tenant_id, 'country:' || country AS b, -1 AS d FROM old_rows
            UNION ALL SELECT tenant_id, 'org:' || org_number, -1 FROM old_rows
            UNION ALL SELECT tenant_id, 'country:' || country, 1 FROM new_rows
            UNION ALL SELECT tenant_id, 'org:' || org_number, 1 FROM new_rows
        ) x GROUP BY tenant_id, b HAVING sum(d) <> 0 ORDER BY tenant_id, b
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = list_counts.n + EXCLUDED.n;
        INSERT INTO list_blocks (tenant_id, kind, block, n)
        SELECT tenant_id, k, blk, sum(d) FROM (
            SELECT tenant_id, 'clients:country:' || country AS k, id >> 10 AS blk, -1 AS d FROM old_rows
            UNION ALL SELECT tenant_id, 'clients:country:' || country, id >> 10, 1 FROM new_rows
        ) x GROUP BY tenant_id, k, blk HAVING sum(d) <> 0 ORDER BY 1, 2, 3
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = list_blocks.n + EXCLUDED.n;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

INSERT INTO list_blocks (tenant_id, kind, block, n)
SELECT tenant_id, 'clients:country:' || country, id >> 10, count(*) FROM clients GROUP BY tenant_id, country, id >> 10;

-- +goose Down
DELETE FROM list_blocks WHERE kind LIKE 'clients:country:%';
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION finsvc_count_clients() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO list_counts (tenant_id, kind, bucket, n)
        SELECT tenant_id, 'clients', b, sum(d) FROM (
            SELECT tenant_id, '' AS b, 1 AS d FROM new_rows
            UNION ALL SELECT tenant_id, 'country:' || country, 1 FROM new_rows
            UNION ALL SELECT tenant_id, 'org:' || org_number, 1 FROM new_rows
        ) x GROUP BY tenant_id, b ORDER BY tenant_id, b
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = list_counts.n + EXCLUDED.n;
        INSERT INTO list_blocks (tenant_id, kind, block, n)
        SELECT tenant_id, 'clients', id >> 10, count(*) FROM new_rows GROUP BY tenant_id, id >> 10 ORDER BY 1, 3
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = list_blocks.n + EXCLUDED.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO list_counts (tenant_id, kind, bucket, n)
        SELECT tenant_id, 'clients', b, sum(d) FROM (
            SELECT tenant_id, '' AS b, -1 AS d FROM old_rows
            UNION ALL SELECT tenant_id, 'country:' || country, -1 FROM old_rows
            UNION ALL SELECT tenant_id, 'org:' || org_number, -1 FROM old_rows
        ) x GROUP BY tenant_id, b ORDER BY tenant_id, b
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = list_counts.n + EXCLUDED.n;
        INSERT INTO list_blocks (tenant_id, kind, block, n)
        SELECT tenant_id, 'clients', id >> 10, -count(*) FROM old_rows GROUP BY tenant_id, id >> 10 ORDER BY 1, 3
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = list_blocks.n + EXCLUDED.n;
    ELSE
        INSERT INTO list_counts (tenant_id, kind, bucket, n)
        SELECT tenant_id, 'clients', b, sum(d) FROM (
            SELECT tenant_id, 'country:' || country AS b, -1 AS d FROM old_rows
            UNION ALL SELECT tenant_id, 'org:' || org_number, -1 FROM old_rows
            UNION ALL SELECT tenant_id, 'country:' || country, 1 FROM new_rows
            UNION ALL SELECT tenant_id, 'org:' || org_number, 1 FROM new_rows
        ) x GROUP BY tenant_id, b HAVING sum(d) <> 0 ORDER BY tenant_id, b
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = list_counts.n + EXCLUDED.n;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
