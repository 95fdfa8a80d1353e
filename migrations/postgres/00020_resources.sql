-- Resources: clients, versioned templates with typed fields, acts and their
-- data points, and the act history.

-- +goose Up
CREATE TABLE clients (
    tenant_id    bigint        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id           bigint        NOT NULL,
    company_name text          NOT NULL,
    org_number   text          NOT NULL,
    country      char(2)       NOT NULL,
    -- Exact decimal; never float (credit_limit is money).
    credit_limit numeric(20,2) NOT NULL,
    created_at   timestamptz   NOT NULL DEFAULT now(),
    updated_at   timestamptz   NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE templates (
    tenant_id           bigint      NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id                  bigint      NOT NULL,
    -- family_id is the id of version 1; all versions of a template share it.
    family_id           bigint      NOT NULL,
    version             integer     NOT NULL,
    previous_version_id bigint,
    name                text        NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT templates_family_version_key UNIQUE (tenant_id, family_id, version)
);

CREATE TABLE template_fields (
    tenant_id   bigint  NOT NULL,
    id          bigint  NOT NULL,
    template_id bigint  NOT NULL,
    position    integer NOT NULL,
    key         text    NOT NULL,
    name        text    NOT NULL,
    type        text    NOT NULL,
    source      text    NOT NULL,
    -- JSON of fieldtype.Options (effective options), or NULL.
    options     text,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT template_fields_key_key UNIQUE (tenant_id, template_id, key),
    FOREIGN KEY (tenant_id, template_id) REFERENCES templates (tenant_id, id) ON DELETE CASCADE
);

CREATE TABLE acts (
    tenant_id    bigint      NOT NULL,
    uuid         uuid        NOT NULL,
    client_id    bigint      NOT NULL,
    template_id  bigint      NOT NULL,
    title        text        NOT NULL,
    status       text        NOT NULL DEFAULT 'draft',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    finalized_at timestamptz,
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
    tenant_id         bigint      NOT NULL,
    id                bigint      NOT NULL,
    act_uuid          uuid        NOT NULL,
    template_field_id bigint      NOT NULL,
    position          integer     NOT NULL,
    key               text        NOT NULL,
    name              text        NOT NULL,
    type              text        NOT NULL,
    source            text        NOT NULL,
    options           text,
    value             text,
    source_value      text,
    -- Increments on every value change; fetch requests snapshot it to tell
    -- "changed since the request".
    revision          bigint      NOT NULL DEFAULT 0,
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT data_points_act_field_key UNIQUE (tenant_id, act_uuid, template_field_id),
    FOREIGN KEY (tenant_id, act_uuid) REFERENCES acts (tenant_id, uuid) ON DELETE CASCADE
);
CREATE INDEX data_points_act_idx ON data_points (tenant_id, act_uuid, position);

CREATE TABLE act_history (
    tenant_id        bigint      NOT NULL,
    id               bigint      NOT NULL,
    act_uuid         uuid        NOT NULL,
    at               timestamptz NOT NULL DEFAULT now(),
    actor_type       text        NOT NULL,
    actor_id         text        NOT NULL,
    actor_user_id    bigint,
    kind             text        NOT NULL,
    data_point_id    bigint,
    fetch_request_id uuid,
    old_value        text,
    new_value        text,
    error            text,
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
