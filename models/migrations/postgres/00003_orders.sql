-- +goose Up
-- The order chain reads every ledger by order_no; coupon_flows' unique key
-- starts with coupon_id, so it needs an index of its own.
CREATE INDEX coupon_flows_order ON coupon_flows (order_no);
-- The chain's per-key reconciliation reads the unfinished tasks of a few
-- keys, also while a backlog of thousands of tasks waits.
CREATE INDEX release_tasks_key ON release_tasks (resource_type, biz_key, status);

-- +goose Down
DROP INDEX release_tasks_key;
DROP INDEX coupon_flows_order;
