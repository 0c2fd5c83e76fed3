-- +goose Up
-- Reconciliation says what it could not check (docs/remote-resources.md):
-- a run that left a key of a remote type unchecked ends PARTIAL.
ALTER TABLE recon_runs DROP CONSTRAINT recon_runs_status_check;
ALTER TABLE recon_runs ADD CONSTRAINT recon_runs_status_check CHECK (status IN ('RUNNING','DONE','FAILED','PARTIAL'));

-- Per run and remote type: how many keys its HELD check compared, and how
-- many it skipped, by reason. held_offered false: the service offers no GET
-- /holds, the type has no HELD check (declared, not skipped).
CREATE TABLE recon_coverage (
    run_id          BIGINT  NOT NULL REFERENCES recon_runs (id),
    resource_type   TEXT    NOT NULL,
    compared        BIGINT  NOT NULL DEFAULT 0,
    unknown_outcome BIGINT  NOT NULL DEFAULT 0,
    no_answer       BIGINT  NOT NULL DEFAULT 0,
    refused         BIGINT  NOT NULL DEFAULT 0,
    other_key       BIGINT  NOT NULL DEFAULT 0,
    unparseable     BIGINT  NOT NULL DEFAULT 0,
    held_offered    BOOLEAN NOT NULL DEFAULT TRUE,
    PRIMARY KEY (run_id, resource_type)
);

-- A key's streak of consecutive runs that skipped it: since when, how many
-- runs, the reasons seen (comma-separated codes), the last run. Gone once a
-- run compares the key or no longer meets it.
CREATE TABLE recon_unchecked (
    resource_type TEXT        NOT NULL,
    biz_key       TEXT        NOT NULL,
    since_run_id  BIGINT      NOT NULL,
    since_at      TIMESTAMPTZ NOT NULL,
    runs          BIGINT      NOT NULL,
    reasons       TEXT        NOT NULL,
    last_run_id   BIGINT      NOT NULL,
    PRIMARY KEY (resource_type, biz_key)
);

-- A ticket's kind: DIFF (checks that disagree) or UNCHECKED (a key skipped
-- on N runs in a row, its check_name 'UNCHECKED' and checks '', so that the
-- (resource_type, biz_key, check_name) index keeps one open per key beside
-- the key's DIFF ticket); streak and reasons are an UNCHECKED ticket's.
ALTER TABLE recon_diffs ADD COLUMN kind TEXT NOT NULL DEFAULT 'DIFF' CHECK (kind IN ('DIFF','UNCHECKED'));
ALTER TABLE recon_diffs ADD COLUMN streak BIGINT NOT NULL DEFAULT 0;
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
ALTER TABLE recon_runs DROP CONSTRAINT recon_runs_status_check;
ALTER TABLE recon_runs ADD CONSTRAINT recon_runs_status_check CHECK (status IN ('RUNNING','DONE','FAILED'));
