-- PostgreSQL notifies replicas of token and role changes here (see the
-- postgres migration of the same number). SQLite serves one process, whose
-- token cache is not enabled, so there is nothing to do; the version exists
-- so that both dialects keep the same numbers.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
