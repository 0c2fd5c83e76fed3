-- +goose Up
-- Reconciliation says what it could not check (docs/remote-resources.md).
-- A run that left a key of a remote type unchecked ends PARTIAL: runs.status
-- widens by editing recon_runs' text in sqlite_schema, as 00023 did (a
-- wider CHECK accepts every stored row); the CREATE TABLE after RESET
-- changes the schema cookie, so every other connection reloads the schema,
-- and the guard fails the migration if the text was not found.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql, 'CHECK (status IN (''RUNNING'',''DONE'',''FAILED''))',
    'CHECK (status IN (''RUNNING'',''DONE'',''FAILED'',''PARTIAL''))')
    WHERE type = 'table' AND name = 'recon_runs';
PRAGMA writable_schema = RESET;
CREATE TABLE up_00029_guard (n INTEGER CHECK (n = 0));
INSERT INTO up_00029_guard SELECT COUNT(*) FROM sqlite_schema
    WHERE type = 'table' AND name = 'recon_runs' AND sql NOT LIKE '%''PARTIAL''))%';
DROP TABLE up_00029_guard;

-- Per run and remote type: how many keys its HELD check compared, and how
-- many it skipped, by reason. held_offered = 0: the service offers no GET
-- /holds, the type has no HELD check (declared, not skipped).
CREATE TABLE recon_coverage (
    run_id          INTEGER NOT NULL REFERENCES recon_runs (id),
    resource_type   TEXT    NOT NULL,
    compared        INTEGER NOT NULL DEFAULT 0,
    unknown_outcome INTEGER NOT NULL DEFAULT 0,
    no_answer       INTEGER NOT NULL DEFAULT 0,
    refused         INTEGER NOT NULL DEFAULT 0,
    other_key       INTEGER NOT NULL DEFAULT 0,
    unparseable     INTEGER NOT NULL DEFAULT 0,
    held_offered    INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (run_id, resource_type)
);

-- A key's streak of consecutive runs that skipped it: since when, how many
-- runs, the reasons seen (comma-separated codes), the last run. Gone once a
-- run compares the key or no longer meets it.
CREATE TABLE recon_unchecked (
    resource_type TEXT     NOT NULL,
    biz_key       TEXT     NOT NULL,
    since_run_id  INTEGER  NOT NULL,
    since_at      DATETIME NOT NULL,
    runs          INTEGER  NOT NULL,
    reasons       TEXT     NOT NULL,
    last_run_id   INTEGER  NOT NULL,
    PRIMARY KEY (resource_type, biz_key)
);

-- A ticket's kind: DIFF (checks that disagree) or UNCHECKED (a key skipped
-- on N runs in a row, its check_name 'UNCHECKED' and checks '', so that the
-- (resource_type, biz_key, check_name) index keeps one open per key beside
-- the key's DIFF ticket); streak and reasons are an UNCHECKED ticket's.
ALTER TABLE recon_diffs ADD COLUMN kind TEXT NOT NULL DEFAULT 'DIFF' CHECK (kind IN ('DIFF','UNCHECKED'));
ALTER TABLE recon_diffs ADD COLUMN streak INTEGER NOT NULL DEFAULT 0;
ALTER TABLE recon_diffs ADD COLUMN reasons TEXT NOT NULL DEFAULT '';

-- +goose Down
-- A PARTIAL run goes back to DONE, as it was recorded before; an UNCHECKED
-- ticket stays as a ticket of its check 'UNCHECKED', which the next run
-- closes as gone.
UPDATE recon_runs SET status = 'DONE' WHERE status = 'PARTIAL';
ALTER TABLE recon_diffs DROP COLUMN reasons;
ALTER TABLE recon_diffs DROP COLUMN streak;
ALTER TABLE recon_diffs DROP COLUMN kind;
DROP TABLE recon_unchecked;
DROP TABLE recon_coverage;
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql, 'CHECK (status IN (''RUNNING'',''DONE'',''FAILED'',''PARTIAL''))',
    'CHECK (status IN (''RUNNING'',''DONE'',''FAILED''))')
    WHERE type = 'table' AND name = 'recon_runs';
PRAGMA writable_schema = RESET;
CREATE TABLE down_00029_cookie (n INTEGER);
DROP TABLE down_00029_cookie;
