-- A second factor for console accounts: see the PostgreSQL migration of
-- the same number.

-- +goose Up
CREATE TABLE mfa_totp (
    tenant_id         INTEGER  NOT NULL,
    user_id           INTEGER  NOT NULL,
    secret_ciphertext TEXT     NOT NULL,
    last_step         INTEGER  NOT NULL DEFAULT 0,
    confirmed_at      DATETIME,
    created_at        DATETIME NOT NULL,
    PRIMARY KEY (tenant_id, user_id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE TABLE mfa_recovery_codes (
    tenant_id INTEGER  NOT NULL,
    user_id   INTEGER  NOT NULL,
    n         INTEGER  NOT NULL,
    code_hash TEXT     NOT NULL,
    used_at   DATETIME,
    PRIMARY KEY (tenant_id, user_id, n),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE TABLE mfa_policies (
    tenant_id  INTEGER  NOT NULL PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    required   TEXT     NOT NULL CHECK (required IN ('off', 'admins', 'everyone')),
    updated_at DATETIME NOT NULL
);
CREATE TABLE mfa_reset_notices (
    tenant_id INTEGER  NOT NULL,
    user_id   INTEGER  NOT NULL,
    reset_at  DATETIME NOT NULL,
    PRIMARY KEY (tenant_id, user_id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
ALTER TABLE web_sessions ADD COLUMN stage TEXT NOT NULL DEFAULT '';
ALTER TABLE web_sessions ADD COLUMN amr TEXT NOT NULL DEFAULT 'pwd';
ALTER TABLE web_sessions ADD COLUMN factor_at DATETIME;

-- +goose Down
ALTER TABLE web_sessions DROP COLUMN factor_at;
ALTER TABLE web_sessions DROP COLUMN amr;
ALTER TABLE web_sessions DROP COLUMN stage;
DROP TABLE mfa_reset_notices;
DROP TABLE mfa_policies;
DROP TABLE mfa_recovery_codes;
DROP TABLE mfa_totp;
