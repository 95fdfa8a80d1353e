-- A flash (internal/oauth/flash.go) carries a new or revealed secret from a
-- form's POST to the page it redirects to, sealed in a cookie. The cookie
-- names a nonce recorded here when it is set; taking the flash deletes the
-- row, so the cookie opens once: a copy replayed later (even in another
-- session of the same user) finds no row and shows nothing. Rows of
-- flashes never taken are purged once expired (the OAuth janitor).

-- +goose Up
CREATE TABLE flash_nonces (
    tenant_id  INTEGER  NOT NULL,
    nonce      TEXT     NOT NULL,
    user_id    INTEGER  NOT NULL,
    expires_at DATETIME NOT NULL,
    PRIMARY KEY (tenant_id, nonce),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX flash_nonces_expires_idx ON flash_nonces (expires_at);

-- +goose Down
DROP TABLE flash_nonces;
