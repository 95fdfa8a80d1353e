-- The fetch flow: a request to refresh data points, and the state of each
-- selected field within it.

-- +goose Up
CREATE TABLE fetch_requests (
    tenant_id              bigint      NOT NULL,
    id                     uuid        NOT NULL,
    act_uuid               uuid        NOT NULL,
    requested_by_user_id   bigint      NOT NULL,
    requested_by_client_id text,
    requested_at           timestamptz NOT NULL,
    expires_at             timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, act_uuid) REFERENCES acts (tenant_id, uuid) ON DELETE CASCADE
);
CREATE INDEX fetch_requests_act_idx ON fetch_requests (tenant_id, act_uuid, requested_at DESC);

CREATE TABLE fetch_request_fields (
    tenant_id         bigint      NOT NULL,
    fetch_request_id  uuid        NOT NULL,
    data_point_id     bigint      NOT NULL,
    external          boolean     NOT NULL,
    -- awaiting | accepted | failed | superseded. "expired" is never stored:
    -- it is derived at read time from expires_at, so expiry needs no writer.
    state             text        NOT NULL,
    -- data_points.revision when the request was made.
    revision_snapshot bigint      NOT NULL,
    -- The accepted value or reported error, to recognise identical re-sends.
    result_value      text,
    error             text,
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, fetch_request_id, data_point_id),
    CONSTRAINT fetch_request_fields_state_check CHECK (state IN ('awaiting', 'accepted', 'failed', 'superseded')),
    FOREIGN KEY (tenant_id, fetch_request_id) REFERENCES fetch_requests (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, data_point_id) REFERENCES data_points (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX fetch_request_fields_dp_idx ON fetch_request_fields (tenant_id, data_point_id, state);

-- +goose Down
DROP TABLE fetch_request_fields;
DROP TABLE fetch_requests;
