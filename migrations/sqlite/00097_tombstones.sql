-- Tombstones: see the PostgreSQL migration of the same number.

-- +goose Up
CREATE TABLE tombstones (
    tenant_id  INTEGER  NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    list       TEXT     NOT NULL,
    id         TEXT     NOT NULL,
    client_id  INTEGER,
    deleted_at DATETIME NOT NULL,
    PRIMARY KEY (tenant_id, list, id)
) WITHOUT ROWID;
CREATE INDEX tombstones_deleted_idx ON tombstones (tenant_id, list, deleted_at, id);
CREATE INDEX tombstones_purge_idx ON tombstones (deleted_at);

-- +goose Down
DROP TABLE tombstones;
