-- Failure notices by email (internal/webhooks/notices): the endpoint state
-- the tenant's admins were last told of ('' none or healthy again,
-- 'failing', 'disabled'). Claiming a notice moves it with a conditional
-- UPDATE, so that each state change is mailed once across replicas.

-- +goose Up
ALTER TABLE webhooks ADD COLUMN notice_state text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE webhooks DROP COLUMN notice_state;
