-- +goose Up
CREATE TABLE recon_runs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    trigger_type TEXT    NOT NULL,
    actor        TEXT    NOT NULL DEFAULT '',
    status       TEXT    NOT NULL CHECK (status IN ('RUNNING','DONE','FAILED')),
    started_at   DATETIME NOT NULL,
    finished_at  DATETIME,
    found        INTEGER NOT NULL DEFAULT 0,
    opened       INTEGER NOT NULL DEFAULT 0,
    closed       INTEGER NOT NULL DEFAULT 0,
    error        TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX recon_runs_started ON recon_runs (started_at, id);

-- A diff is a ticket. While it is not RESOLVED there is at most one per
-- resource, key and check; each run updates it or, when the diff is gone,
-- closes it automatically.
CREATE TABLE recon_diffs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    resource_type TEXT    NOT NULL,
    biz_key       TEXT    NOT NULL,
    check_name    TEXT    NOT NULL,
    expected      INTEGER NOT NULL,
    actual        INTEGER NOT NULL,
    sign          INTEGER NOT NULL CHECK (sign IN (-1, 1)),
    orders        TEXT    NOT NULL DEFAULT '',
    status        TEXT    NOT NULL CHECK (status IN ('OPEN','ACKED','RESOLVED')),
    first_run_id  INTEGER NOT NULL REFERENCES recon_runs (id),
    last_run_id   INTEGER NOT NULL REFERENCES recon_runs (id),
    note          TEXT    NOT NULL DEFAULT '',
    acked_by      TEXT    NOT NULL DEFAULT '',
    acked_at      DATETIME,
    resolved_by   TEXT    NOT NULL DEFAULT '',
    resolved_at   DATETIME,
    auto_closed   INTEGER NOT NULL DEFAULT 0,
    created_at    DATETIME NOT NULL,
    updated_at    DATETIME NOT NULL
);
CREATE UNIQUE INDEX recon_diffs_open ON recon_diffs (resource_type, biz_key, check_name) WHERE status <> 'RESOLVED';
CREATE INDEX recon_diffs_status ON recon_diffs (status, resource_type, id);
CREATE INDEX recon_diffs_created ON recon_diffs (created_at, id);

-- +goose Down
DROP TABLE recon_diffs;
DROP TABLE recon_runs;
