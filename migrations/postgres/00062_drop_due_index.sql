-- The claim's plan must not depend on how much delivered history the table
-- holds. deliveries_due_idx (next_attempt_at over every live row, from
-- 00040) served the first, global claim; the fair claim (00070) reads each
-- registration's due rows through deliveries_claim_idx, which has the same
-- predicate and leads with (tenant_id, webhook_id). With both present the
-- planner chose by statistics: once the table held delivered history (10,000
-- rows sufficed, measured in `go run ./bench -scale`) it walked
-- deliveries_due_idx for every registration, filtering out the others'
-- rows and the dead entries of rows claimed since the last vacuum, and the
-- claim took 2-3× as long as with an empty history. Nothing else needs it:
-- outbox.Depth reads deliveries_claim_idx (same predicate). One fewer index
-- is also one fewer write per delivery state change.

-- +goose Up
DROP INDEX deliveries_due_idx;

-- +goose Down
CREATE INDEX deliveries_due_idx ON deliveries (next_attempt_at) WHERE status IN ('pending', 'delivering');
