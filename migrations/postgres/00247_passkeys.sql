-- Passkeys (WebAuthn credentials) as a second factor (internal/mfa). A
-- user holds several, each named by them; n numbers a user's passkeys.
-- credential is the library's credential record as JSON (public key,
-- sign count, flags, transports): public keys, so nothing is sealed.
-- credential_id is the authenticator's id (base64url), unique in the
-- tenant; it is never written to the audit log or a log line.
-- mfa_passkey_challenges holds the one ceremony a user has under way per
-- purpose ('register', 'login'): taken (deleted) by its finish, and
-- refused after expires_at.

-- +goose Up
CREATE TABLE mfa_passkeys (
    tenant_id     bigint      NOT NULL,
    user_id       bigint      NOT NULL,
    n             integer     NOT NULL,
    credential_id text        NOT NULL,
    name          text        NOT NULL,
    credential    text        NOT NULL,
    created_at    timestamptz NOT NULL,
    last_used_at  timestamptz,
    PRIMARY KEY (tenant_id, user_id, n),
    UNIQUE (tenant_id, credential_id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE TABLE mfa_passkey_challenges (
    tenant_id  bigint      NOT NULL,
    user_id    bigint      NOT NULL,
    purpose    text        NOT NULL CHECK (purpose IN ('register', 'login')),
    session    text        NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, user_id, purpose),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE mfa_passkey_challenges;
DROP TABLE mfa_passkeys;
