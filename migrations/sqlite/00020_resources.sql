-- Resources: clients, versioned templates with typed fields, acts and their
-- data points, and the act history.

-- +goose Up
CREATE TABLE clients (
    tenant_id    INTEGER        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id           INTEGER        NOT NULL,
    company_name TEXT          NOT NULL,
    org_number   TEXT          NOT NULL,
    country      TEXT          NOT NULL,
    -- Exact decimal as canonical text; never REAL (credit_limit is money).
    credit_limit TEXT    NOT NULL,
    created_at   DATETIME   NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    updated_at   DATETIME   NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE templates (
    tenant_id           INTEGER      NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id                  INTEGER      NOT NULL,
    -- family_id is the id of version 1; all versions of a template share it.
    family_id           INTEGER      NOT NULL,
    version             INTEGER     NOT NULL,
    previous_version_id INTEGER,
    name                TEXT        NOT NULL,
    created_at          DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    updated_at          DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT templates_family_version_key UNIQUE (tenant_id, family_id, version)
);

CREATE TABLE template_fields (
    tenant_id   INTEGER  NOT NULL,
    id          INTEGER  NOT NULL,
    template_id INTEGER  NOT NULL,
    position    INTEGER NOT NULL,
    key         TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    type        TEXT    NOT NULL,
    source      TEXT    NOT NULL,
    -- JSON of fieldtype.Options (effective options), or NULL.
    options     TEXT,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT template_fields_key_key UNIQUE (tenant_id, template_id, key),
    FOREIGN KEY (tenant_id, template_id) REFERENCES templates (tenant_id, id) ON DELETE CASCADE
);

CREATE TABLE acts (
    tenant_id    INTEGER      NOT NULL,
    uuid         TEXT        NOT NULL,
    client_id    INTEGER      NOT NULL,
    template_id  INTEGER      NOT NULL,
    title        TEXT        NOT NULL,
    status       TEXT        NOT NULL DEFAULT 'draft',
    created_at   DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    updated_at   DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    finalized_at DATETIME,
    PRIMARY KEY (tenant_id, uuid),
    CONSTRAINT acts_status_check CHECK (status IN ('draft', 'final')),
    FOREIGN KEY (tenant_id, client_id) REFERENCES clients (tenant_id, id),
    FOREIGN KEY (tenant_id, template_id) REFERENCES templates (tenant_id, id)
);
CREATE INDEX acts_client_created_idx ON acts (tenant_id, client_id, created_at DESC);
CREATE INDEX acts_created_idx ON acts (tenant_id, created_at DESC);
CREATE INDEX acts_template_idx ON acts (tenant_id, template_id);

-- A data point snapshots its template field's definition, so that reading an
-- act or building an event never consults the live template.
CREATE TABLE data_points (
    tenant_id         INTEGER      NOT NULL,
    id                INTEGER      NOT NULL,
    act_uuid          TEXT        NOT NULL,
    template_field_id INTEGER      NOT NULL,
    position          INTEGER     NOT NULL,
    key               TEXT        NOT NULL,
    name              TEXT        NOT NULL,
    type              TEXT        NOT NULL,
    source            TEXT        NOT NULL,
    options           TEXT,
    value             TEXT,
    source_value      TEXT,
    -- Increments on every value change; fetch requests snapshot it to tell
    -- "changed since the request".
    revision          INTEGER      NOT NULL DEFAULT 0,
    updated_at        DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT data_points_act_field_key UNIQUE (tenant_id, act_uuid, template_field_id),
    FOREIGN KEY (tenant_id, act_uuid) REFERENCES acts (tenant_id, uuid) ON DELETE CASCADE
);
CREATE INDEX data_points_act_idx ON data_points (tenant_id, act_uuid, position);

CREATE TABLE act_history (
    tenant_id        INTEGER      NOT NULL,
    id               INTEGER      NOT NULL,
    act_uuid         TEXT        NOT NULL,
    at               DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    actor_type       TEXT        NOT NULL,
    actor_id         TEXT        NOT NULL,
    actor_user_id    INTEGER,
    kind             TEXT        NOT NULL,
    data_point_id    INTEGER,
    fetch_request_id uuid,
    old_value        TEXT,
    new_value        TEXT,
    error            TEXT,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, act_uuid) REFERENCES acts (tenant_id, uuid) ON DELETE CASCADE
);
CREATE INDEX act_history_act_idx ON act_history (tenant_id, act_uuid, id);

-- +goose Down
DROP TABLE act_history;
DROP TABLE data_points;
DROP TABLE acts;
DROP TABLE template_fields;
DROP TABLE templates;
DROP TABLE clients;
