-- Each data point points at the most recent fetch request that selected it,
-- so that reading an act (and answering a PUT) finds every field's current
-- fetch state with key lookups, whatever the length of the act's fetch
-- history. Set under the act's lock by each new fetch request.

-- +goose Up
ALTER TABLE data_points ADD COLUMN last_fetch_request_id TEXT;

-- +goose Down
ALTER TABLE data_points DROP COLUMN last_fetch_request_id;
