-- Fair claiming: workers claim per registration, at most
-- FINSVC_WEBHOOK_ENDPOINT_CONCURRENCY attempts in flight for each. The claim
-- reads each registration's oldest due deliveries and counts its leased
-- ones; these indexes make both a short index range per registration, so a
-- backlog of one registration costs the claim nothing for the others.

-- +goose Up
CREATE INDEX deliveries_claim_idx ON deliveries (tenant_id, webhook_id, next_attempt_at)
    WHERE status IN ('pending', 'delivering');
CREATE INDEX deliveries_inflight_idx ON deliveries (tenant_id, webhook_id, lease_expires_at)
    WHERE status = 'delivering';

-- +goose Down
DROP INDEX deliveries_inflight_idx;
DROP INDEX deliveries_claim_idx;
