-- Foundation: tenants, users and per-tenant id sequences.
-- Conventions for every later migration: tenant_id leads every key of a
-- tenant-owned table and references tenants ON DELETE CASCADE (the
-- connection enables foreign_keys); timestamps are DATETIME columns written
-- by Go in UTC, so that the text form sorts chronologically and the driver
-- parses them back into time.Time.

-- +goose Up
CREATE TABLE tenants (
    -- AUTOINCREMENT never reuses an id: per-tenant token HMAC keys are
    -- derived from the tenant id, so a deleted tenant's id must never come back.
    id         INTEGER  PRIMARY KEY AUTOINCREMENT,
    slug       TEXT     NOT NULL,
    name       TEXT     NOT NULL,
    created_at DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    CONSTRAINT tenants_slug_key UNIQUE (slug),
    CONSTRAINT tenants_slug_format CHECK (
        length(slug) BETWEEN 2 AND 63 AND slug NOT GLOB '*[^a-z0-9-]*'
    )
);

CREATE TABLE users (
    tenant_id     INTEGER  NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id            INTEGER  NOT NULL,
    email         TEXT     NOT NULL,
    name          TEXT     NOT NULL DEFAULT '',
    role          TEXT     NOT NULL,
    password_hash TEXT     NOT NULL,
    created_at    DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    updated_at    DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT users_tenant_email_key UNIQUE (tenant_id, email),
    CONSTRAINT users_role_check CHECK (role IN ('admin', 'member', 'viewer'))
);

-- id_sequences hands out per-tenant numeric ids (db.NextIDs): tenant A's
-- client 1 and tenant B's client 1 are different rows with the same id.
CREATE TABLE id_sequences (
    tenant_id INTEGER NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name      TEXT    NOT NULL,
    next_id   INTEGER NOT NULL CHECK (next_id > 0),
    PRIMARY KEY (tenant_id, name)
);

-- +goose Down
DROP TABLE id_sequences;
DROP TABLE users;
DROP TABLE tenants;
