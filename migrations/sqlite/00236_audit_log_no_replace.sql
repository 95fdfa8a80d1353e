-- The audit log is append-only (migration 00160): its triggers refuse an
-- UPDATE and an early DELETE. SQLite's INSERT OR REPLACE (and REPLACE
-- INTO) slips past both: the conflict's row is deleted without firing a
-- DELETE trigger (unless recursive_triggers is on), and a new one takes
-- its place. A BEFORE INSERT trigger runs before the conflict is
-- resolved, so refusing an insert whose key is already taken makes
-- replacement impossible, whatever the statement's conflict clause.

-- +goose Up
-- +goose StatementBegin
CREATE TRIGGER audit_log_no_replace BEFORE INSERT ON audit_log
WHEN EXISTS (SELECT 1 FROM audit_log WHERE tenant_id = NEW.tenant_id AND id = NEW.id)
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only: a record cannot be replaced');
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER audit_log_no_replace;
