-- The audit log: append-only records of security-relevant actions. id is
-- the record's number in its tenant in commit order (id_sequences
-- "audit_log", locked until the writer commits), so that a cursor resumes
-- after a record without skipping one that committed later. The trigger
-- refuses every UPDATE, and a DELETE of a record younger than the minimum
-- retention (90 days), so that only the retention purge removes records;
-- TRUNCATE is refused too.

-- +goose Up
CREATE TABLE audit_log (
    tenant_id       bigint      NOT NULL,
    id              bigint      NOT NULL,
    occurred_at     timestamptz NOT NULL,
    actor_type      text        NOT NULL,
    actor_user_id   bigint,
    actor_client_id text,
    source_addr     text        NOT NULL DEFAULT '',
    user_agent      text        NOT NULL DEFAULT '',
    action          text        NOT NULL,
    target_type     text        NOT NULL DEFAULT '',
    target_id       text        NOT NULL DEFAULT '',
    outcome         text        NOT NULL,
    request_id      text        NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX audit_log_action_idx ON audit_log (tenant_id, action, id);
CREATE INDEX audit_log_actor_idx ON audit_log (tenant_id, actor_user_id, id);
CREATE INDEX audit_log_target_idx ON audit_log (tenant_id, target_type, target_id, id);
CREATE INDEX audit_log_purge_idx ON audit_log (occurred_at);

-- +goose StatementBegin
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        RAISE EXCEPTION 'audit_log is append-only: UPDATE refused';
    END IF;
    IF TG_OP = 'TRUNCATE' THEN
        RAISE EXCEPTION 'audit_log is append-only: TRUNCATE refused';
    END IF;
    IF OLD.occurred_at > now() - interval '90 days' THEN
        RAISE EXCEPTION 'audit_log is append-only: a record younger than 90 days cannot be deleted';
    END IF;
    RETURN OLD;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

-- +goose Down
DROP TABLE audit_log;
DROP FUNCTION audit_log_append_only();
