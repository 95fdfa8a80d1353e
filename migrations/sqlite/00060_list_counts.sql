-- List totals without scanning: see the PostgreSQL migration of the same
-- number for the tables and buckets. SQLite has no statement-level
-- triggers, so these are row-level; SQLite serves one process and small
-- data, where that is cheap.

-- +goose Up
CREATE TABLE list_counts (
    tenant_id INTEGER NOT NULL,
    kind      TEXT    NOT NULL,
    bucket    TEXT    NOT NULL DEFAULT '',
    n         INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, kind, bucket)
) WITHOUT ROWID;

CREATE TABLE list_blocks (
    tenant_id INTEGER NOT NULL,
    kind      TEXT    NOT NULL,
    block     INTEGER NOT NULL,
    n         INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, kind, block)
) WITHOUT ROWID;

-- +goose StatementBegin
CREATE TRIGGER clients_count_ins AFTER INSERT ON clients BEGIN
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'clients', '', 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
    INSERT INTO list_blocks (tenant_id, kind, block, n) VALUES (NEW.tenant_id, 'clients', NEW.id >> 10, 1)
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (1);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER clients_count_del AFTER DELETE ON clients BEGIN
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'clients', '', -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
    INSERT INTO list_blocks (tenant_id, kind, block, n) VALUES (OLD.tenant_id, 'clients', OLD.id >> 10, -1)
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (-1);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER templates_count_ins AFTER INSERT ON templates BEGIN
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'templates', '', 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
    INSERT INTO list_blocks (tenant_id, kind, block, n) VALUES (NEW.tenant_id, 'templates', NEW.id >> 10, 1)
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (1);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER templates_count_del AFTER DELETE ON templates BEGIN
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'templates', '', -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
    INSERT INTO list_blocks (tenant_id, kind, block, n) VALUES (OLD.tenant_id, 'templates', OLD.id >> 10, -1)
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (-1);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER users_count_ins AFTER INSERT ON users BEGIN
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'users', '', 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
    INSERT INTO list_blocks (tenant_id, kind, block, n) VALUES (NEW.tenant_id, 'users', NEW.id >> 10, 1)
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (1);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER users_count_del AFTER DELETE ON users BEGIN
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'users', '', -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
    INSERT INTO list_blocks (tenant_id, kind, block, n) VALUES (OLD.tenant_id, 'users', OLD.id >> 10, -1)
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (-1);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER acts_count_ins AFTER INSERT ON acts BEGIN
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'acts', '', 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'acts', 's:' || NEW.status, 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'acts', 'c:' || NEW.client_id, 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'acts', 'c:' || NEW.client_id || ':s:' || NEW.status, 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER acts_count_del AFTER DELETE ON acts BEGIN
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'acts', '', -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'acts', 's:' || OLD.status, -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'acts', 'c:' || OLD.client_id, -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'acts', 'c:' || OLD.client_id || ':s:' || OLD.status, -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER acts_count_upd AFTER UPDATE OF status, client_id ON acts WHEN OLD.status IS NOT NEW.status OR OLD.client_id IS NOT NEW.client_id BEGIN
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'acts', 's:' || OLD.status, -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'acts', 'c:' || OLD.client_id, -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'acts', 'c:' || OLD.client_id || ':s:' || OLD.status, -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'acts', 's:' || NEW.status, 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'acts', 'c:' || NEW.client_id, 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'acts', 'c:' || NEW.client_id || ':s:' || NEW.status, 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER webhooks_count_ins AFTER INSERT ON webhooks BEGIN
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'webhooks', '', 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'webhooks', 'u:' || NEW.created_by_user_id, 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER webhooks_count_del AFTER DELETE ON webhooks BEGIN
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'webhooks', '', -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'webhooks', 'u:' || OLD.created_by_user_id, -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER deliveries_count_ins AFTER INSERT ON deliveries BEGIN
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'deliveries', 'w:' || NEW.webhook_id, 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER deliveries_count_del AFTER DELETE ON deliveries BEGIN
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'deliveries', 'w:' || OLD.webhook_id, -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
END;
-- +goose StatementEnd

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
DROP TRIGGER deliveries_count_del;
DROP TRIGGER deliveries_count_ins;
DROP TRIGGER webhooks_count_del;
DROP TRIGGER webhooks_count_ins;
DROP TRIGGER acts_count_upd;
DROP TRIGGER acts_count_del;
DROP TRIGGER acts_count_ins;
DROP TRIGGER users_count_del;
DROP TRIGGER users_count_ins;
DROP TRIGGER templates_count_del;
DROP TRIGGER templates_count_ins;
DROP TRIGGER clients_count_del;
DROP TRIGGER clients_count_ins;
DROP TABLE list_blocks;
DROP TABLE list_counts;
