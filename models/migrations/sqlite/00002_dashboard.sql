-- +goose Up
-- The reason an operator gave for a rerun is kept on the task and copied to
-- each attempt made after it.
ALTER TABLE release_tasks ADD COLUMN rerun_by TEXT NOT NULL DEFAULT '';
ALTER TABLE release_tasks ADD COLUMN rerun_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE task_attempts ADD COLUMN note TEXT NOT NULL DEFAULT '';
CREATE INDEX task_attempts_finished ON task_attempts (finished_at);
CREATE INDEX release_tasks_type_status ON release_tasks (resource_type, status, next_at);
CREATE INDEX release_tasks_class ON release_tasks (error_class, status);
CREATE INDEX release_tasks_created ON release_tasks (created_at, id);
CREATE INDEX orders_status_created ON orders (status, created_at, id);
CREATE INDEX audit_log_created ON audit_log (created_at);

-- +goose Down
DROP INDEX audit_log_created;
DROP INDEX orders_status_created;
DROP INDEX release_tasks_created;
DROP INDEX release_tasks_class;
DROP INDEX release_tasks_type_status;
DROP INDEX task_attempts_finished;
ALTER TABLE task_attempts DROP COLUMN note;
ALTER TABLE release_tasks DROP COLUMN rerun_reason;
ALTER TABLE release_tasks DROP COLUMN rerun_by;
