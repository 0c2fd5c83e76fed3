-- +goose Up
-- Accounts. A name is stored exactly as given (any text but control
-- characters); the password is an argon2id PHC string.
CREATE TABLE users (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    name                TEXT     NOT NULL UNIQUE,
    role                TEXT     NOT NULL CHECK (role IN ('viewer','operator','admin')),
    password_hash       TEXT     NOT NULL,
    disabled            INTEGER  NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
    last_login_at       DATETIME,
    password_changed_at DATETIME NOT NULL,
    created_at          DATETIME NOT NULL,
    updated_at          DATETIME NOT NULL
);

-- Browser sessions, by the SHA-256 (hex) of the cookie's token: the token
-- itself is never stored, so a copy of the database logs nobody in. role is
-- the user's role when the session was issued; a session whose user's role
-- has changed since is renewed.
CREATE TABLE sessions (
    token_hash   TEXT     PRIMARY KEY,
    user_id      INTEGER  NOT NULL REFERENCES users (id),
    role         TEXT     NOT NULL CHECK (role IN ('viewer','operator','admin')),
    created_at   DATETIME NOT NULL,
    last_seen_at DATETIME NOT NULL,
    expires_at   DATETIME NOT NULL,
    ip           TEXT     NOT NULL DEFAULT '',
    user_agent   TEXT     NOT NULL DEFAULT ''
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expires ON sessions (expires_at);

-- API tokens for scripts, by the SHA-256 (hex) of the secret; prefix is the
-- start of the secret, so a token can be recognised without being stored.
-- A revoked token's name may be used again.
CREATE TABLE api_tokens (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    name         TEXT     NOT NULL,
    role         TEXT     NOT NULL CHECK (role IN ('viewer','operator','admin')),
    token_hash   TEXT     NOT NULL UNIQUE,
    prefix       TEXT     NOT NULL,
    created_by   TEXT     NOT NULL,
    created_at   DATETIME NOT NULL,
    last_used_at DATETIME,
    revoked_at   DATETIME
);
CREATE UNIQUE INDEX api_tokens_live_name ON api_tokens (name) WHERE revoked_at IS NULL;

-- Login throttling, shared by every instance: one row per 'ip:<addr>' or
-- 'user:<name as typed>'.
CREATE TABLE login_throttle (
    key          TEXT     PRIMARY KEY,
    failures     INTEGER  NOT NULL,
    window_start DATETIME NOT NULL,
    locked_until DATETIME
);

-- Who did it, with what role, from where, in which request. The
-- append-only triggers stay as they are: they do not name columns.
ALTER TABLE audit_log ADD COLUMN role TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_log ADD COLUMN request_id TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_log ADD COLUMN ip TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_log ADD COLUMN user_agent TEXT NOT NULL DEFAULT '';
-- The audit page filters by actor or by action, newest first.
CREATE INDEX audit_log_actor ON audit_log (actor, id);
CREATE INDEX audit_log_action ON audit_log (action, id);

-- +goose Down
DROP INDEX audit_log_action;
DROP INDEX audit_log_actor;
ALTER TABLE audit_log DROP COLUMN user_agent;
ALTER TABLE audit_log DROP COLUMN ip;
ALTER TABLE audit_log DROP COLUMN request_id;
ALTER TABLE audit_log DROP COLUMN role;
DROP TABLE login_throttle;
DROP INDEX api_tokens_live_name;
DROP TABLE api_tokens;
DROP INDEX sessions_expires;
DROP INDEX sessions_user;
DROP TABLE sessions;
DROP TABLE users;
