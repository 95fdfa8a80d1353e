-- Endpoint health and automatic disabling of a registration that keeps failing.
-- A registration's attempts feed a circuit breaker: after a run of failures
-- its circuit opens until circuit_open_until and the claim skips it, so a
-- dead endpoint holds no worker; failing_since is the first failure since
-- the last success, and a registration failing for 5 days is disabled
-- (disabled_at, disabled_reason).

-- +goose Up
ALTER TABLE webhooks ADD COLUMN consecutive_failures integer NOT NULL DEFAULT 0;
ALTER TABLE webhooks ADD COLUMN last_success_at timestamptz;
ALTER TABLE webhooks ADD COLUMN last_failure_at timestamptz;
ALTER TABLE webhooks ADD COLUMN last_failure_reason TEXT;
ALTER TABLE webhooks ADD COLUMN failing_since timestamptz;
ALTER TABLE webhooks ADD COLUMN circuit_open_until timestamptz;
ALTER TABLE webhooks ADD COLUMN disabled_at timestamptz;

-- +goose Down
ALTER TABLE webhooks DROP COLUMN disabled_at;
ALTER TABLE webhooks DROP COLUMN circuit_open_until;
ALTER TABLE webhooks DROP COLUMN failing_since;
ALTER TABLE webhooks DROP COLUMN last_failure_reason;
ALTER TABLE webhooks DROP COLUMN last_failure_at;
ALTER TABLE webhooks DROP COLUMN last_success_at;
ALTER TABLE webhooks DROP COLUMN consecutive_failures;
