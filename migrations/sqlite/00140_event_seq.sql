-- The events API's numbering: see the PostgreSQL migration of the same
-- number.

-- +goose Up
ALTER TABLE events ADD COLUMN seq INTEGER;
ALTER TABLE events ADD COLUMN owner_user_id INTEGER;
UPDATE events SET seq = o.rn
FROM (SELECT tenant_id, id, row_number() OVER (PARTITION BY tenant_id ORDER BY occurred_at, id) AS rn FROM events) o
WHERE events.tenant_id = o.tenant_id AND events.id = o.id;
INSERT INTO id_sequences (tenant_id, name, next_id)
SELECT tenant_id, 'events.seq', max(seq) + 1 FROM events GROUP BY tenant_id;
CREATE UNIQUE INDEX events_seq_idx ON events (tenant_id, seq);
CREATE INDEX events_kind_seq_idx ON events (tenant_id, kind, seq);

-- +goose Down
DROP INDEX events_kind_seq_idx;
DROP INDEX events_seq_idx;
ALTER TABLE events DROP COLUMN owner_user_id;
ALTER TABLE events DROP COLUMN seq;
