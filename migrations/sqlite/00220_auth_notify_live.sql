-- PostgreSQL narrows its token notifications here (see the postgres
-- migration of the same number). SQLite has no notifications (migration
-- 00050); the version exists so that both dialects keep the same numbers.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
