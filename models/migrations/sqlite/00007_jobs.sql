-- +goose Up
-- One lease row per cron job: the instance whose token is on the row runs
-- the job until lease_until, renewing it while it runs; '' means free.
-- next_due is the first scheduled time not yet claimed by any instance, so
-- a time slot runs once however many instances tick at it. skip_noted is
-- the token of the run for which a SKIPPED row was already written, so an
-- overrunning run is reported once, not at every tick it covers.
CREATE TABLE job_locks (
    name         TEXT PRIMARY KEY,
    owner        TEXT NOT NULL DEFAULT '',
    token        TEXT NOT NULL DEFAULT '',
    triggered_by TEXT NOT NULL DEFAULT '',
    lease_until  DATETIME NOT NULL,
    taken_at     DATETIME NOT NULL,
    released_at  DATETIME,
    next_due     DATETIME,
    skip_noted   TEXT NOT NULL DEFAULT ''
);

-- Runs of cron jobs that did something, failed, were started by an
-- operator, or could not start because an earlier run still held the job.
-- Quiet routine runs are not recorded: job_locks keeps their last start.
CREATE TABLE job_runs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    job          TEXT NOT NULL,
    instance     TEXT NOT NULL,
    triggered_by TEXT NOT NULL,
    outcome      TEXT NOT NULL CHECK (outcome IN ('OK','FAILED','SKIPPED')),
    summary      TEXT NOT NULL DEFAULT '',
    detail       TEXT NOT NULL DEFAULT '',
    error        TEXT NOT NULL DEFAULT '',
    started_at   DATETIME NOT NULL,
    finished_at  DATETIME NOT NULL
);
-- The Jobs page reads the newest runs of one job; cleanup deletes by age.
CREATE INDEX job_runs_job ON job_runs (job, id);
CREATE INDEX job_runs_started ON job_runs (started_at);

-- +goose Down
DROP INDEX job_runs_started;
DROP INDEX job_runs_job;
DROP TABLE job_runs;
DROP TABLE job_locks;
