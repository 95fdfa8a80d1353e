-- Incremental sync: see the PostgreSQL migration of the same number. The
-- first stamps start a second past the latest updated_at (SQLite's
-- strftime('%s') drops the fraction).

-- +goose Up
CREATE INDEX clients_updated_idx ON clients (tenant_id, updated_at, id);
CREATE INDEX templates_updated_idx ON templates (tenant_id, updated_at, id);
CREATE INDEX acts_updated_idx ON acts (tenant_id, updated_at, seq);

INSERT INTO id_sequences (tenant_id, name, next_id)
SELECT tenant_id, 'clients.changed', (CAST(strftime('%s', max(updated_at)) AS INTEGER) + 1) * 1000000 FROM clients GROUP BY tenant_id
UNION ALL SELECT tenant_id, 'templates.changed', (CAST(strftime('%s', max(updated_at)) AS INTEGER) + 1) * 1000000 FROM templates GROUP BY tenant_id
UNION ALL SELECT tenant_id, 'acts.changed', (CAST(strftime('%s', max(updated_at)) AS INTEGER) + 1) * 1000000 FROM acts GROUP BY tenant_id;

-- +goose Down
DELETE FROM id_sequences WHERE name IN ('clients.changed', 'templates.changed', 'acts.changed');
DROP INDEX acts_updated_idx;
DROP INDEX templates_updated_idx;
DROP INDEX clients_updated_idx;
