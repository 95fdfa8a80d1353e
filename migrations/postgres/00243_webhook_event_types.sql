-- Several event types per registration: webhook_event_types holds every
-- kind a registration subscribes to (one row per kind), and all_events
-- subscribes it to every subscribable kind, those added later included.
-- webhooks.event stays, the first of its kinds (the deprecated single
-- event the API still shows and accepts); the trigger keeps a row for it,
-- so that a registration written with event alone subscribes to it.

-- +goose Up
ALTER TABLE webhooks ADD COLUMN all_events boolean NOT NULL DEFAULT false;
CREATE TABLE webhook_event_types (
    tenant_id  bigint NOT NULL,
    webhook_id bigint NOT NULL,
    kind       text   NOT NULL,
    PRIMARY KEY (tenant_id, webhook_id, kind),
    FOREIGN KEY (tenant_id, webhook_id) REFERENCES webhooks (tenant_id, id) ON DELETE CASCADE
);
-- Emit's question: which registrations of the tenant take this kind.
CREATE INDEX webhook_event_types_kind_idx ON webhook_event_types (tenant_id, kind);
INSERT INTO webhook_event_types (tenant_id, webhook_id, kind) SELECT tenant_id, id, event FROM webhooks;

-- +goose StatementBegin
CREATE FUNCTION webhook_event_types_first() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_event_types (tenant_id, webhook_id, kind)
    VALUES (NEW.tenant_id, NEW.id, NEW.event) ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER webhook_event_types_first AFTER INSERT ON webhooks
FOR EACH ROW EXECUTE FUNCTION webhook_event_types_first();

-- +goose Down
DROP TRIGGER webhook_event_types_first ON webhooks;
DROP FUNCTION webhook_event_types_first();
DROP TABLE webhook_event_types;
ALTER TABLE webhooks DROP COLUMN all_events;
