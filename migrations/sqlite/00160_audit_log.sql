-- The audit log: see the PostgreSQL migration of the same number. SQLite
-- has no TRUNCATE; its DELETE without WHERE runs the row trigger.

-- +goose Up
CREATE TABLE audit_log (
    tenant_id       INTEGER  NOT NULL,
    id              INTEGER  NOT NULL,
    occurred_at     DATETIME NOT NULL,
    actor_type      TEXT     NOT NULL,
    actor_user_id   INTEGER,
    actor_client_id TEXT,
    source_addr     TEXT     NOT NULL DEFAULT '',
    user_agent      TEXT     NOT NULL DEFAULT '',
    action          TEXT     NOT NULL,
    target_type     TEXT     NOT NULL DEFAULT '',
    target_id       TEXT     NOT NULL DEFAULT '',
    outcome         TEXT     NOT NULL,
    request_id      TEXT     NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX audit_log_action_idx ON audit_log (tenant_id, action, id);
CREATE INDEX audit_log_actor_idx ON audit_log (tenant_id, actor_user_id, id);
CREATE INDEX audit_log_target_idx ON audit_log (tenant_id, target_type, target_id, id);
CREATE INDEX audit_log_purge_idx ON audit_log (occurred_at);

-- +goose StatementBegin
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only: UPDATE refused');
END;
-- +goose StatementEnd
-- occurred_at is stored as UTC text (YYYY-MM-DD HH:MM:SS...), which
-- compares in time order with datetime()'s.
-- +goose StatementBegin
CREATE TRIGGER audit_log_no_early_delete BEFORE DELETE ON audit_log
WHEN OLD.occurred_at > datetime('now', '-90 days')
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only: a record younger than 90 days cannot be deleted');
END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE audit_log;
