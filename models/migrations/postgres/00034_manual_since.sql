-- +goose Up
-- A MANUAL task's age counts from when it went MANUAL: fail() writes
-- manual_since then, and a rerun clears it. updated_at is not that time:
-- it moves with any later write of the row. A task already MANUAL was
-- last written by the failure that sent it there (nothing else writes a
-- MANUAL row), so its updated_at is when it went MANUAL.
ALTER TABLE release_tasks ADD COLUMN manual_since TIMESTAMPTZ;
UPDATE release_tasks SET manual_since = updated_at WHERE status = 'MANUAL';
-- The MANUAL tasks by age, for the overview's buckets, the metrics and
-- the list sorted oldest first. A row set MANUAL by hand in SQL has no
-- manual_since; its updated_at stands in, so it is counted, not lost.
-- A query uses the index only when it repeats the expression and the
-- condition.
CREATE INDEX release_tasks_manual_age ON release_tasks (COALESCE(manual_since, updated_at), id) WHERE status = 'MANUAL';
-- The unresolved tickets by age (since they were opened), likewise.
CREATE INDEX recon_diffs_unresolved_age ON recon_diffs (created_at, id) WHERE status IN ('OPEN','ACKED');

-- +goose Down
DROP INDEX recon_diffs_unresolved_age;
DROP INDEX release_tasks_manual_age;
ALTER TABLE release_tasks DROP COLUMN manual_since;
