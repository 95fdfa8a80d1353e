-- List filters: clients by country, org_number and a
-- case-insensitive company-name prefix (q); acts by template_id.
--
-- Equality filters keep exact totals in list_counts, maintained by the
-- triggers like every other bucket (migration 00060):
--   clients: 'country:<XX>', 'org:<org_number>'
--   acts:    't:<template_id>', 't:<template_id>:s:<status>'
-- Combinations without a bucket of their own (client and template, a
-- prefix, several client filters) are counted by an index scan bounded by
-- the narrowest filter's rows (internal/clients, internal/acts).
--
-- name_key is the company name folded to lower case, which q matches by
-- prefix. COLLATE "C" makes the index's order bytewise, so a prefix is one
-- index range on both dialects. The stores set it (Go's strings.ToLower);
-- the trigger below sets it for rows written outside them, too.

-- +goose Up
ALTER TABLE clients ADD COLUMN name_key text COLLATE "C" NOT NULL DEFAULT '';
UPDATE clients SET name_key = lower(company_name);

-- +goose StatementBegin
CREATE FUNCTION finsvc_client_name_key() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.name_key := lower(NEW.company_name);
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER clients_name_key BEFORE INSERT OR UPDATE OF company_name ON clients
    FOR EACH ROW EXECUTE FUNCTION finsvc_client_name_key();

CREATE INDEX clients_name_key_idx ON clients (tenant_id, name_key, id);
CREATE INDEX clients_country_idx ON clients (tenant_id, country, id);
CREATE INDEX clients_org_number_idx ON clients (tenant_id, org_number, id);
CREATE INDEX acts_template_seq_idx ON acts (tenant_id, template_id, seq);

-- Clients: the whole list, its blocks and the equality filters. An update
-- that moves a client between buckets (country, org_number) moves its count.
-- +goose StatementBegin
CREATE FUNCTION finsvc_count_clients() RETURNS trigger LANGUAGE plpgsql AS $$
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
DROP TRIGGER clients_count_ins ON clients;
DROP TRIGGER clients_count_del ON clients;
CREATE TRIGGER clients_count_ins AFTER INSERT ON clients REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_clients();
CREATE TRIGGER clients_count_del AFTER DELETE ON clients REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_clients();
CREATE TRIGGER clients_count_upd AFTER UPDATE ON clients REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_clients();

-- Acts: migration 00060's buckets plus the template ones.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION finsvc_count_acts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO list_counts (tenant_id, kind, bucket, n)
        SELECT tenant_id, 'acts', b, sum(d) FROM (
            SELECT tenant_id, '' AS b, 1 AS d FROM new_rows
            UNION ALL SELECT tenant_id, 's:' || status, 1 FROM new_rows
            UNION ALL SELECT tenant_id, 'c:' || client_id, 1 FROM new_rows
            UNION ALL SELECT tenant_id, 'c:' || client_id || ':s:' || status, 1 FROM new_rows
            UNION ALL SELECT tenant_id, 't:' || template_id, 1 FROM new_rows
            UNION ALL SELECT tenant_id, 't:' || template_id || ':s:' || status, 1 FROM new_rows
        ) x GROUP BY tenant_id, b ORDER BY tenant_id, b
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = list_counts.n + EXCLUDED.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO list_counts (tenant_id, kind, bucket, n)
        SELECT tenant_id, 'acts', b, sum(d) FROM (
            SELECT tenant_id, '' AS b, -1 AS d FROM old_rows
            UNION ALL SELECT tenant_id, 's:' || status, -1 FROM old_rows
            UNION ALL SELECT tenant_id, 'c:' || client_id, -1 FROM old_rows
            UNION ALL SELECT tenant_id, 'c:' || client_id || ':s:' || status, -1 FROM old_rows
            UNION ALL SELECT tenant_id, 't:' || template_id, -1 FROM old_rows
            UNION ALL SELECT tenant_id, 't:' || template_id || ':s:' || status, -1 FROM old_rows
        ) x GROUP BY tenant_id, b ORDER BY tenant_id, b
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = list_counts.n + EXCLUDED.n;
    ELSE
        INSERT INTO list_counts (tenant_id, kind, bucket, n)
        SELECT tenant_id, 'acts', b, sum(d) FROM (
            SELECT tenant_id, 's:' || status AS b, -1 AS d FROM old_rows
            UNION ALL SELECT tenant_id, 'c:' || client_id, -1 FROM old_rows
            UNION ALL SELECT tenant_id, 'c:' || client_id || ':s:' || status, -1 FROM old_rows
            UNION ALL SELECT tenant_id, 't:' || template_id, -1 FROM old_rows
            UNION ALL SELECT tenant_id, 't:' || template_id || ':s:' || status, -1 FROM old_rows
            UNION ALL SELECT tenant_id, 's:' || status, 1 FROM new_rows
            UNION ALL SELECT tenant_id, 'c:' || client_id, 1 FROM new_rows
            UNION ALL SELECT tenant_id, 'c:' || client_id || ':s:' || status, 1 FROM new_rows
            UNION ALL SELECT tenant_id, 't:' || template_id, 1 FROM new_rows
            UNION ALL SELECT tenant_id, 't:' || template_id || ':s:' || status, 1 FROM new_rows
        ) x GROUP BY tenant_id, b HAVING sum(d) <> 0 ORDER BY tenant_id, b
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = list_counts.n + EXCLUDED.n;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- Rows that exist already.
INSERT INTO list_counts (tenant_id, kind, bucket, n)
SELECT tenant_id, 'clients', 'country:' || country, count(*) FROM clients GROUP BY tenant_id, country
UNION ALL SELECT tenant_id, 'clients', 'org:' || org_number, count(*) FROM clients GROUP BY tenant_id, org_number
UNION ALL SELECT tenant_id, 'acts', 't:' || template_id, count(*) FROM acts GROUP BY tenant_id, template_id
UNION ALL SELECT tenant_id, 'acts', 't:' || template_id || ':s:' || status, count(*) FROM acts GROUP BY tenant_id, template_id, status;

-- +goose Down
DELETE FROM list_counts WHERE (kind = 'clients' AND bucket <> '') OR (kind = 'acts' AND bucket LIKE 't:%');
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION finsvc_count_acts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO list_counts (tenant_id, kind, bucket, n)
        SELECT tenant_id, 'acts', b, sum(d) FROM (
            SELECT tenant_id, '' AS b, 1 AS d FROM new_rows
            UNION ALL SELECT tenant_id, 's:' || status, 1 FROM new_rows
            UNION ALL SELECT tenant_id, 'c:' || client_id, 1 FROM new_rows
            UNION ALL SELECT tenant_id, 'c:' || client_id || ':s:' || status, 1 FROM new_rows
        ) x GROUP BY tenant_id, b ORDER BY tenant_id, b
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = list_counts.n + EXCLUDED.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO list_counts (tenant_id, kind, bucket, n)
        SELECT tenant_id, 'acts', b, sum(d) FROM (
            SELECT tenant_id, '' AS b, -1 AS d FROM old_rows
            UNION ALL SELECT tenant_id, 's:' || status, -1 FROM old_rows
            UNION ALL SELECT tenant_id, 'c:' || client_id, -1 FROM old_rows
            UNION ALL SELECT tenant_id, 'c:' || client_id || ':s:' || status, -1 FROM old_rows
        ) x GROUP BY tenant_id, b ORDER BY tenant_id, b
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = list_counts.n + EXCLUDED.n;
    ELSE
        INSERT INTO list_counts (tenant_id, kind, bucket, n)
        SELECT tenant_id, 'acts', b, sum(d) FROM (
            SELECT tenant_id, 's:' || status AS b, -1 AS d FROM old_rows
            UNION ALL SELECT tenant_id, 'c:' || client_id, -1 FROM old_rows
            UNION ALL SELECT tenant_id, 'c:' || client_id || ':s:' || status, -1 FROM old_rows
            UNION ALL SELECT tenant_id, 's:' || status, 1 FROM new_rows
            UNION ALL SELECT tenant_id, 'c:' || client_id, 1 FROM new_rows
            UNION ALL SELECT tenant_id, 'c:' || client_id || ':s:' || status, 1 FROM new_rows
        ) x GROUP BY tenant_id, b HAVING sum(d) <> 0 ORDER BY tenant_id, b
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = list_counts.n + EXCLUDED.n;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
DROP TRIGGER clients_count_upd ON clients;
DROP TRIGGER clients_count_del ON clients;
DROP TRIGGER clients_count_ins ON clients;
CREATE TRIGGER clients_count_ins AFTER INSERT ON clients REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_id_list('clients', '1');
CREATE TRIGGER clients_count_del AFTER DELETE ON clients REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_id_list('clients', '-1');
DROP FUNCTION finsvc_count_clients();
DROP INDEX acts_template_seq_idx;
DROP INDEX clients_org_number_idx;
DROP INDEX clients_country_idx;
DROP INDEX clients_name_key_idx;
DROP TRIGGER clients_name_key ON clients;
DROP FUNCTION finsvc_client_name_key();
ALTER TABLE clients DROP COLUMN name_key;
