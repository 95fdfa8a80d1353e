-- As on PostgreSQL (see migrations/postgres/00062): deliveries_claim_idx,
-- with the same predicate, serves the claim and outbox.Depth; the global
-- deliveries_due_idx only gave the planner a worse way to the same rows.

-- +goose Up
DROP INDEX deliveries_due_idx;

-- +goose Down
CREATE INDEX deliveries_due_idx ON deliveries (next_attempt_at) WHERE status IN ('pending', 'delivering');
