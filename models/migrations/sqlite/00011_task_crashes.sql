-- +goose Up
-- When retries run out a task's class says RETRY_EXHAUSTED; the class of
-- the error that was last is kept beside it, for the task page and the
-- chain ("8 of 8 tries failed; last: TIMEOUT …") and for a rerun to put
-- back.
ALTER TABLE release_tasks ADD COLUMN last_error_class TEXT NOT NULL DEFAULT '';
UPDATE release_tasks SET last_error_class = error_class WHERE error_class <> '';
UPDATE release_tasks SET error_class = 'RETRY_EXHAUSTED'
    WHERE status = 'MANUAL' AND failures >= 8 AND error_class IN ('TIMEOUT','DB_BUSY','CONNECTION','UNKNOWN','CRASHED');
-- A waiting task whose lease is set is in flight, or its worker died: every
-- outcome clears or ends the lease, so claims and the lease rescue look
-- here for tries that expired without one. It holds the tasks in flight
-- only; a query uses it only when its WHERE repeats the condition.
CREATE INDEX release_tasks_leased ON release_tasks (lease_until) WHERE status IN ('PENDING','RETRY') AND lease_until IS NOT NULL;

-- +goose Down
DROP INDEX release_tasks_leased;
UPDATE release_tasks SET error_class = last_error_class WHERE error_class = 'RETRY_EXHAUSTED';
ALTER TABLE release_tasks DROP COLUMN last_error_class;
