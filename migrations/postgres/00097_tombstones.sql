-- Tombstones: a deleted client or act leaves a row here, in
-- the deleting transaction, so that an incremental sync learns of the
-- deletion (GET /deleted/clients, GET /deleted/acts). deleted_at is a
-- stamp of the list the row was deleted from (db.Stamp): unique per tenant
-- and list and in commit order, like updated_at. The retention janitor
-- purges tombstones older than tombstones.Retention (README, Incremental
-- sync). id is the deleted row's id as text (a client's number, an act's
-- uuid); client_id is the deleted act's client.

-- +goose Up
CREATE TABLE tombstones (
    tenant_id  bigint      NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    list       text        NOT NULL,
    id         text        NOT NULL,
    client_id  bigint,
    deleted_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, list, id)
);
CREATE INDEX tombstones_deleted_idx ON tombstones (tenant_id, list, deleted_at, id);
-- The retention purge looks across tenants.
CREATE INDEX tombstones_purge_idx ON tombstones (deleted_at);

-- +goose Down
DROP TABLE tombstones;
