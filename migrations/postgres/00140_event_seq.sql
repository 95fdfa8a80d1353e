-- The events API (GET /events): every event gets seq, its number in the
-- tenant in commit order (taken from id_sequences "events.seq" when the
-- event is written, a row that stays locked until the writer commits), so
-- that a cursor resumes after an event without skipping one that committed
-- later; the list reads (tenant_id, seq) and (tenant_id, kind, seq) from
-- the newest end. owner_user_id marks an event only some callers may list:
-- a webhook.test event's registration owner (members see only their own
-- registrations). Rows written without a seq (older rows are numbered here)
-- are not listed.

-- +goose Up
ALTER TABLE events ADD COLUMN seq bigint;
ALTER TABLE events ADD COLUMN owner_user_id bigint;
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
