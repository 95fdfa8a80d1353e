-- A second factor for console accounts (internal/mfa). A user's TOTP
-- secret is sealed (internal/sealing, bound to the user, so `finsvc secret
-- reseal` covers it); last_step is the last accepted time step, so a code
-- is accepted once. confirmed_at is NULL while enrolment waits for its
-- first code. Recovery codes are stored as password hashes, each usable
-- once. The tenant's policy says whom a second factor is required of
-- (no row: nobody). A web session records how far its sign-in went
-- (stage: '' signed in, 'factor' waiting for the second factor, 'enrol'
-- made to enrol first), which factors it used (amr) and when the last
-- second factor was given (step-up). mfa_reset_notices tells a user at
-- their next sign-in that an admin removed their factors.

-- +goose Up
CREATE TABLE mfa_totp (
    tenant_id         bigint      NOT NULL,
    user_id           bigint      NOT NULL,
    secret_ciphertext text        NOT NULL,
    last_step         bigint      NOT NULL DEFAULT 0,
    confirmed_at      timestamptz,
    created_at        timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, user_id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE TABLE mfa_recovery_codes (
    tenant_id bigint      NOT NULL,
    user_id   bigint      NOT NULL,
    n         integer     NOT NULL,
    code_hash text        NOT NULL,
    used_at   timestamptz,
    PRIMARY KEY (tenant_id, user_id, n),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE TABLE mfa_policies (
    tenant_id  bigint      NOT NULL PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    required   text        NOT NULL CHECK (required IN ('off', 'admins', 'everyone')),
    updated_at timestamptz NOT NULL
);
CREATE TABLE mfa_reset_notices (
    tenant_id bigint      NOT NULL,
    user_id   bigint      NOT NULL,
    reset_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, user_id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
ALTER TABLE web_sessions ADD COLUMN stage text NOT NULL DEFAULT '';
ALTER TABLE web_sessions ADD COLUMN amr text NOT NULL DEFAULT 'pwd';
ALTER TABLE web_sessions ADD COLUMN factor_at timestamptz;

-- +goose Down
ALTER TABLE web_sessions DROP COLUMN factor_at;
ALTER TABLE web_sessions DROP COLUMN amr;
ALTER TABLE web_sessions DROP COLUMN stage;
DROP TABLE mfa_reset_notices;
DROP TABLE mfa_policies;
DROP TABLE mfa_recovery_codes;
DROP TABLE mfa_totp;
