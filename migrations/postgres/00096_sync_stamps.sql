-- Incremental sync: lists with updated_since are ordered by
-- (updated_at, id) and read by these indexes, which also count the rows
-- changed since (an index-only scan as long as the changes since).
--
-- updated_at of clients, templates and acts is a stamp (db.Stamp): unique
-- per tenant and list and in commit order, handed out from id_sequences
-- ('<list>.changed', microseconds since the Unix epoch). The rows below
-- start each tenant's stamps after its latest updated_at, whichever
-- replica's clock wrote it.

-- +goose Up
CREATE INDEX clients_updated_idx ON clients (tenant_id, updated_at, id);
CREATE INDEX templates_updated_idx ON templates (tenant_id, updated_at, id);
CREATE INDEX acts_updated_idx ON acts (tenant_id, updated_at, seq);

INSERT INTO id_sequences (tenant_id, name, next_id)
SELECT tenant_id, 'clients.changed', (extract(epoch FROM max(updated_at)) * 1000000)::bigint FROM clients GROUP BY tenant_id
UNION ALL SELECT tenant_id, 'templates.changed', (extract(epoch FROM max(updated_at)) * 1000000)::bigint FROM templates GROUP BY tenant_id
UNION ALL SELECT tenant_id, 'acts.changed', (extract(epoch FROM max(updated_at)) * 1000000)::bigint FROM acts GROUP BY tenant_id
ON CONFLICT (tenant_id, name) DO UPDATE SET next_id = GREATEST(id_sequences.next_id, EXCLUDED.next_id);

-- +goose Down
DELETE FROM id_sequences WHERE name IN ('clients.changed', 'templates.changed', 'acts.changed');
DROP INDEX acts_updated_idx;
DROP INDEX templates_updated_idx;
DROP INDEX clients_updated_idx;
