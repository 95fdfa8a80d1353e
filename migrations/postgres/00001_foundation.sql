-- Foundation: tenants, users and per-tenant id sequences.
-- Conventions for every later migration: tenant_id leads every key of a
-- tenant-owned table and references tenants ON DELETE CASCADE; timestamps are
-- timestamptz written in UTC.

-- +goose Up
CREATE TABLE tenants (
    -- bigserial never reuses an id: per-tenant token HMAC keys are derived
    -- from the tenant id, so a deleted tenant's id must never come back.
    id         bigserial   PRIMARY KEY,
    slug       text        NOT NULL,
    name       text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT tenants_slug_key UNIQUE (slug),
    CONSTRAINT tenants_slug_format CHECK (slug ~ '^[a-z0-9-]{2,63}$')
);

CREATE TABLE users (
    tenant_id     bigint      NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id            bigint      NOT NULL,
    email         text        NOT NULL,
    name          text        NOT NULL DEFAULT '',
    role          text        NOT NULL,
    password_hash text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT users_tenant_email_key UNIQUE (tenant_id, email),
    CONSTRAINT users_role_check CHECK (role IN ('admin', 'member', 'viewer'))
);

-- id_sequences hands out per-tenant numeric ids (db.NextIDs): tenant A's
-- client 1 and tenant B's client 1 are different rows with the same id.
CREATE TABLE id_sequences (
    tenant_id bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name      text   NOT NULL,
    next_id   bigint NOT NULL,
    PRIMARY KEY (tenant_id, name),
    CONSTRAINT id_sequences_next_id_check CHECK (next_id > 0)
);

-- +goose Down
DROP TABLE id_sequences;
DROP TABLE users;
DROP TABLE tenants;
