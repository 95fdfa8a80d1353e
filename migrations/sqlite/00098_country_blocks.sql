-- Country blocks: see the PostgreSQL migration of the same number. Row
-- triggers, as migration 00060's: one block row per insert and delete, two
-- for an update that moves a client to another country.

-- +goose Up
-- +goose StatementBegin
CREATE TRIGGER clients_country_blocks_ins AFTER INSERT ON clients BEGIN
    INSERT INTO list_blocks (tenant_id, kind, block, n) VALUES (NEW.tenant_id, 'clients:country:' || NEW.country, NEW.id >> 10, 1)
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (1);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER clients_country_blocks_del AFTER DELETE ON clients BEGIN
    INSERT INTO list_blocks (tenant_id, kind, block, n) VALUES (OLD.tenant_id, 'clients:country:' || OLD.country, OLD.id >> 10, -1)
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (-1);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER clients_country_blocks_upd AFTER UPDATE OF country, id, tenant_id ON clients
    WHEN OLD.country IS NOT NEW.country OR OLD.id IS NOT NEW.id OR OLD.tenant_id IS NOT NEW.tenant_id BEGIN
    INSERT INTO list_blocks (tenant_id, kind, block, n) VALUES (OLD.tenant_id, 'clients:country:' || OLD.country, OLD.id >> 10, -1)
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (-1);
    INSERT INTO list_blocks (tenant_id, kind, block, n) VALUES (NEW.tenant_id, 'clients:country:' || NEW.country, NEW.id >> 10, 1)
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + (1);
END;
-- +goose StatementEnd

INSERT INTO list_blocks (tenant_id, kind, block, n)
SELECT tenant_id, 'clients:country:' || country, id >> 10, count(*) FROM clients GROUP BY tenant_id, country, id >> 10;

-- +goose Down
DROP TRIGGER clients_country_blocks_upd;
DROP TRIGGER clients_country_blocks_del;
DROP TRIGGER clients_country_blocks_ins;
DELETE FROM list_blocks WHERE kind LIKE 'clients:country:%';
