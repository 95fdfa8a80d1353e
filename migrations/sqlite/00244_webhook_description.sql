-- A free-text description per webhook registration, so that operators can
-- tell endpoints apart ('' when none was given).

-- +goose Up
ALTER TABLE webhooks ADD COLUMN description text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE webhooks DROP COLUMN description;
