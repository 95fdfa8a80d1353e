-- SQLite's INSERT OR REPLACE could replace an audit record past the
-- append-only triggers (see the sqlite migration of the same number).
-- PostgreSQL has no REPLACE: INSERT ... ON CONFLICT DO UPDATE fires the
-- UPDATE trigger of migration 00160, which refuses it. The version exists
-- so that both dialects keep the same numbers.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
