-- As on PostgreSQL (see migrations/postgres/00099): SQLite has no
-- TRUNCATE (a DELETE without WHERE fires the row triggers of 00098), so
-- there is nothing to add.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
