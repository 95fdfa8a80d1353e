-- List totals without scanning (ARCHITECTURE.md, Lists at scale).
--
-- list_counts holds, per tenant, the number of rows of every list and of
-- every filter the API offers (bucket '' is the whole list):
--   clients, templates, users: ''
--   acts:       '', 's:<status>', 'c:<client_id>', 'c:<client_id>:s:<status>'
--   webhooks:   '', 'u:<created_by_user_id>' (what a member may see)
--   deliveries: 'w:<webhook_id>' (a registration's delivery log)
-- list_blocks holds, for the lists ordered by id, the number of rows per
-- block of 1024 ids, so that a deep page finds its first row by summing a
-- few hundred block counts instead of reading every row before it.
--
-- Both are maintained by triggers, so rows written outside the stores (COPY,
-- a manual fix) are counted too. The triggers are statement-level with
-- transition tables: a COPY of a million rows costs one aggregate upsert per
-- statement, not a million. Each upsert takes its counter rows in key order.
-- TRUNCATE forgets the table's counts. `finsvc counts check` compares them
-- with COUNT(*) and `finsvc counts rebuild` recomputes them (after a restore
-- that bypassed triggers, such as pg_restore --disable-triggers).

-- +goose Up
CREATE TABLE list_counts (
    tenant_id bigint NOT NULL,
    kind      text   NOT NULL,
    bucket    text   NOT NULL DEFAULT '',
    n         bigint NOT NULL,
    PRIMARY KEY (tenant_id, kind, bucket)
);

CREATE TABLE list_blocks (
    tenant_id bigint NOT NULL,
    kind      text   NOT NULL,
    block     bigint NOT NULL,
    n         bigint NOT NULL,
    PRIMARY KEY (tenant_id, kind, block)
);

-- Rows of an id-ordered list (clients, templates, users): TG_ARGV[0] is the
-- kind, TG_ARGV[1] the sign (+1 for an insert, -1 for a delete).
-- +goose StatementBegin
CREATE FUNCTION finsvc_count_id_list() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    k text := TG_ARGV[0];
    d bigint := TG_ARGV[1]::bigint;
BEGIN
    IF d > 0 THEN
        INSERT INTO list_counts (tenant_id, kind, bucket, n)
        SELECT tenant_id, k, '', count(*) FROM new_rows GROUP BY tenant_id ORDER BY tenant_id
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = list_counts.n + EXCLUDED.n;
        INSERT INTO list_blocks (tenant_id, kind, block, n)
        SELECT tenant_id, k, id >> 10, count(*) FROM new_rows GROUP BY tenant_id, id >> 10 ORDER BY 1, 3
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = list_blocks.n + EXCLUDED.n;
    ELSE
        INSERT INTO list_counts (tenant_id, kind, bucket, n)
        SELECT tenant_id, k, '', -count(*) FROM old_rows GROUP BY tenant_id ORDER BY tenant_id
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = list_counts.n + EXCLUDED.n;
        INSERT INTO list_blocks (tenant_id, kind, block, n)
        SELECT tenant_id, k, id >> 10, -count(*) FROM old_rows GROUP BY tenant_id, id >> 10 ORDER BY 1, 3
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = list_blocks.n + EXCLUDED.n;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- Acts: the whole list and its filters, on insert, delete and any update
-- (an update that moves no act between buckets changes nothing).
-- +goose StatementBegin
CREATE FUNCTION finsvc_count_acts() RETURNS trigger LANGUAGE plpgsql AS $$
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

-- +goose StatementBegin
CREATE FUNCTION finsvc_count_webhooks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO list_counts (tenant_id, kind, bucket, n)
        SELECT tenant_id, 'webhooks', b, sum(d) FROM (
            SELECT tenant_id, '' AS b, 1 AS d FROM new_rows
            UNION ALL SELECT tenant_id, 'u:' || created_by_user_id, 1 FROM new_rows
        ) x GROUP BY tenant_id, b ORDER BY tenant_id, b
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = list_counts.n + EXCLUDED.n;
    ELSE
        INSERT INTO list_counts (tenant_id, kind, bucket, n)
        SELECT tenant_id, 'webhooks', b, sum(d) FROM (
            SELECT tenant_id, '' AS b, -1 AS d FROM old_rows
            UNION ALL SELECT tenant_id, 'u:' || created_by_user_id, -1 FROM old_rows
        ) x GROUP BY tenant_id, b ORDER BY tenant_id, b
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = list_counts.n + EXCLUDED.n;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION finsvc_count_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO list_counts (tenant_id, kind, bucket, n)
        SELECT tenant_id, 'deliveries', 'w:' || webhook_id, count(*) FROM new_rows
        GROUP BY tenant_id, webhook_id ORDER BY tenant_id, 'w:' || webhook_id
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = list_counts.n + EXCLUDED.n;
    ELSE
        INSERT INTO list_counts (tenant_id, kind, bucket, n)
        SELECT tenant_id, 'deliveries', 'w:' || webhook_id, -count(*) FROM old_rows
        GROUP BY tenant_id, webhook_id ORDER BY tenant_id, 'w:' || webhook_id
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = list_counts.n + EXCLUDED.n;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- TRUNCATE: the table's counts are gone with its rows. TG_ARGV[0]: kind.
-- +goose StatementBegin
CREATE FUNCTION finsvc_count_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM list_counts WHERE kind = TG_ARGV[0];
    DELETE FROM list_blocks WHERE kind = TG_ARGV[0];
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER clients_count_ins AFTER INSERT ON clients REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_id_list('clients', '1');
CREATE TRIGGER clients_count_del AFTER DELETE ON clients REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_id_list('clients', '-1');
CREATE TRIGGER clients_count_trunc AFTER TRUNCATE ON clients
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_truncate('clients');
CREATE TRIGGER templates_count_ins AFTER INSERT ON templates REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_id_list('templates', '1');
CREATE TRIGGER templates_count_del AFTER DELETE ON templates REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_id_list('templates', '-1');
CREATE TRIGGER templates_count_trunc AFTER TRUNCATE ON templates
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_truncate('templates');
CREATE TRIGGER users_count_ins AFTER INSERT ON users REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_id_list('users', '1');
CREATE TRIGGER users_count_del AFTER DELETE ON users REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_id_list('users', '-1');
CREATE TRIGGER users_count_trunc AFTER TRUNCATE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_truncate('users');
CREATE TRIGGER acts_count_ins AFTER INSERT ON acts REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_acts();
CREATE TRIGGER acts_count_del AFTER DELETE ON acts REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_acts();
CREATE TRIGGER acts_count_upd AFTER UPDATE ON acts REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_acts();
CREATE TRIGGER acts_count_trunc AFTER TRUNCATE ON acts
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_truncate('acts');
CREATE TRIGGER webhooks_count_ins AFTER INSERT ON webhooks REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_webhooks();
CREATE TRIGGER webhooks_count_del AFTER DELETE ON webhooks REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_webhooks();
CREATE TRIGGER webhooks_count_trunc AFTER TRUNCATE ON webhooks
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_truncate('webhooks');
CREATE TRIGGER deliveries_count_ins AFTER INSERT ON deliveries REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_deliveries();
CREATE TRIGGER deliveries_count_del AFTER DELETE ON deliveries REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_deliveries();
CREATE TRIGGER deliveries_count_trunc AFTER TRUNCATE ON deliveries
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_count_truncate('deliveries');

-- Rows that exist already.
INSERT INTO list_counts (tenant_id, kind, bucket, n)
SELECT tenant_id, 'clients', '', count(*) FROM clients GROUP BY tenant_id
UNION ALL SELECT tenant_id, 'templates', '', count(*) FROM templates GROUP BY tenant_id
UNION ALL SELECT tenant_id, 'users', '', count(*) FROM users GROUP BY tenant_id
UNION ALL SELECT tenant_id, 'acts', '', count(*) FROM acts GROUP BY tenant_id
UNION ALL SELECT tenant_id, 'acts', 's:' || status, count(*) FROM acts GROUP BY tenant_id, status
UNION ALL SELECT tenant_id, 'acts', 'c:' || client_id, count(*) FROM acts GROUP BY tenant_id, client_id
UNION ALL SELECT tenant_id, 'acts', 'c:' || client_id || ':s:' || status, count(*) FROM acts GROUP BY tenant_id, client_id, status
UNION ALL SELECT tenant_id, 'webhooks', '', count(*) FROM webhooks GROUP BY tenant_id
UNION ALL SELECT tenant_id, 'webhooks', 'u:' || created_by_user_id, count(*) FROM webhooks GROUP BY tenant_id, created_by_user_id
UNION ALL SELECT tenant_id, 'deliveries', 'w:' || webhook_id, count(*) FROM deliveries GROUP BY tenant_id, webhook_id;
INSERT INTO list_blocks (tenant_id, kind, block, n)
SELECT tenant_id, 'clients', id >> 10, count(*) FROM clients GROUP BY tenant_id, id >> 10
UNION ALL SELECT tenant_id, 'templates', id >> 10, count(*) FROM templates GROUP BY tenant_id, id >> 10
UNION ALL SELECT tenant_id, 'users', id >> 10, count(*) FROM users GROUP BY tenant_id, id >> 10;

-- Deep pages of acts read only this index (a deferred join: the page's
-- keys first, then the rows), per filter.
CREATE INDEX acts_list_idx ON acts (tenant_id, created_at DESC, uuid DESC);
CREATE INDEX acts_status_list_idx ON acts (tenant_id, status, created_at DESC, uuid DESC);
CREATE INDEX acts_client_list_idx ON acts (tenant_id, client_id, created_at DESC, uuid DESC);
DROP INDEX acts_created_idx;
DROP INDEX acts_client_created_idx;

-- +goose Down
CREATE INDEX acts_client_created_idx ON acts (tenant_id, client_id, created_at DESC);
CREATE INDEX acts_created_idx ON acts (tenant_id, created_at DESC);
DROP INDEX acts_client_list_idx;
DROP INDEX acts_status_list_idx;
DROP INDEX acts_list_idx;
DROP TRIGGER deliveries_count_trunc ON deliveries;
DROP TRIGGER deliveries_count_del ON deliveries;
DROP TRIGGER deliveries_count_ins ON deliveries;
DROP TRIGGER webhooks_count_trunc ON webhooks;
DROP TRIGGER webhooks_count_del ON webhooks;
DROP TRIGGER webhooks_count_ins ON webhooks;
DROP TRIGGER acts_count_trunc ON acts;
DROP TRIGGER acts_count_upd ON acts;
DROP TRIGGER acts_count_del ON acts;
DROP TRIGGER acts_count_ins ON acts;
DROP TRIGGER users_count_trunc ON users;
DROP TRIGGER users_count_del ON users;
DROP TRIGGER users_count_ins ON users;
DROP TRIGGER templates_count_trunc ON templates;
DROP TRIGGER templates_count_del ON templates;
DROP TRIGGER templates_count_ins ON templates;
DROP TRIGGER clients_count_trunc ON clients;
DROP TRIGGER clients_count_del ON clients;
DROP TRIGGER clients_count_ins ON clients;
DROP FUNCTION finsvc_count_truncate();
DROP FUNCTION finsvc_count_deliveries();
DROP FUNCTION finsvc_count_webhooks();
DROP FUNCTION finsvc_count_acts();
DROP FUNCTION finsvc_count_id_list();
DROP TABLE list_blocks;
DROP TABLE list_counts;
