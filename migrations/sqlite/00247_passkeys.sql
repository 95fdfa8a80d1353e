-- Passkeys (WebAuthn credentials): see the PostgreSQL migration of the
-- same number.

-- +goose Up
CREATE TABLE mfa_passkeys (
    tenant_id     INTEGER  NOT NULL,
    user_id       INTEGER  NOT NULL,
    n             INTEGER  NOT NULL,
    credential_id TEXT     NOT NULL,
    name          TEXT     NOT NULL,
    credential    TEXT     NOT NULL,
    created_at    DATETIME NOT NULL,
    last_used_at  DATETIME,
    PRIMARY KEY (tenant_id, user_id, n),
    UNIQUE (tenant_id, credential_id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE TABLE mfa_passkey_challenges (
    tenant_id  INTEGER  NOT NULL,
    user_id    INTEGER  NOT NULL,
    purpose    TEXT     NOT NULL CHECK (purpose IN ('register', 'login')),
    session    TEXT     NOT NULL,
    expires_at DATETIME NOT NULL,
    PRIMARY KEY (tenant_id, user_id, purpose),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE mfa_passkey_challenges;
DROP TABLE mfa_passkeys;
