-- List filters: see the PostgreSQL migration of the same number for the
-- buckets and name_key. SQLite's lower() folds ASCII only, so the store
-- sets name_key (Go's strings.ToLower); the trigger below fills it, ASCII
-- folded, for a row inserted without one (outside the stores).

-- +goose Up
ALTER TABLE clients ADD COLUMN name_key TEXT NOT NULL DEFAULT '';
UPDATE clients SET name_key = lower(company_name);

-- +goose StatementBegin
CREATE TRIGGER clients_name_key AFTER INSERT ON clients WHEN NEW.name_key = '' BEGIN
    UPDATE clients SET name_key = lower(NEW.company_name) WHERE tenant_id = NEW.tenant_id AND id = NEW.id;
END;
-- +goose StatementEnd

CREATE INDEX clients_name_key_idx ON clients (tenant_id, name_key, id);
CREATE INDEX clients_country_idx ON clients (tenant_id, country, id);
CREATE INDEX clients_org_number_idx ON clients (tenant_id, org_number, id);
CREATE INDEX acts_template_seq_idx ON acts (tenant_id, template_id, seq);

-- +goose StatementBegin
CREATE TRIGGER clients_filter_ins AFTER INSERT ON clients BEGIN
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'clients', 'country:' || NEW.country, 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'clients', 'org:' || NEW.org_number, 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER clients_filter_del AFTER DELETE ON clients BEGIN
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'clients', 'country:' || OLD.country, -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'clients', 'org:' || OLD.org_number, -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER clients_filter_upd AFTER UPDATE OF country, org_number ON clients WHEN OLD.country IS NOT NEW.country OR OLD.org_number IS NOT NEW.org_number BEGIN
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'clients', 'country:' || OLD.country, -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'clients', 'org:' || OLD.org_number, -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'clients', 'country:' || NEW.country, 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'clients', 'org:' || NEW.org_number, 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER acts_template_ins AFTER INSERT ON acts BEGIN
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'acts', 't:' || NEW.template_id, 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'acts', 't:' || NEW.template_id || ':s:' || NEW.status, 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER acts_template_del AFTER DELETE ON acts BEGIN
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'acts', 't:' || OLD.template_id, -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'acts', 't:' || OLD.template_id || ':s:' || OLD.status, -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER acts_template_upd AFTER UPDATE OF status, template_id ON acts WHEN OLD.status IS NOT NEW.status OR OLD.template_id IS NOT NEW.template_id BEGIN
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'acts', 't:' || OLD.template_id, -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (OLD.tenant_id, 'acts', 't:' || OLD.template_id || ':s:' || OLD.status, -1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (-1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'acts', 't:' || NEW.template_id, 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES (NEW.tenant_id, 'acts', 't:' || NEW.template_id || ':s:' || NEW.status, 1)
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + (1);
END;
-- +goose StatementEnd


INSERT INTO list_counts (tenant_id, kind, bucket, n)
SELECT tenant_id, 'clients', 'country:' || country, count(*) FROM clients GROUP BY tenant_id, country
UNION ALL SELECT tenant_id, 'clients', 'org:' || org_number, count(*) FROM clients GROUP BY tenant_id, org_number
UNION ALL SELECT tenant_id, 'acts', 't:' || template_id, count(*) FROM acts GROUP BY tenant_id, template_id
UNION ALL SELECT tenant_id, 'acts', 't:' || template_id || ':s:' || status, count(*) FROM acts GROUP BY tenant_id, template_id, status;

-- +goose Down
DELETE FROM list_counts WHERE (kind = 'clients' AND bucket <> '') OR (kind = 'acts' AND bucket LIKE 't:%');
DROP TRIGGER acts_template_upd;
DROP TRIGGER acts_template_del;
DROP TRIGGER acts_template_ins;
DROP TRIGGER clients_filter_upd;
DROP TRIGGER clients_filter_del;
DROP TRIGGER clients_filter_ins;
DROP INDEX acts_template_seq_idx;
DROP INDEX clients_org_number_idx;
DROP INDEX clients_country_idx;
DROP INDEX clients_name_key_idx;
DROP TRIGGER clients_name_key;
ALTER TABLE clients DROP COLUMN name_key;
