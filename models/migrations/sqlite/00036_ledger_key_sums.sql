-- +goose Up
-- A key's ledger sums (what its row must be if every change wrote its
-- ledger row) are read by the MANUAL task list, the rerun previews and a
-- correction, once per stopped key. Each counter ledger's key index now
-- carries type and qty too, so the sums are read from the index alone,
-- not from a table row per ledger row. It replaces the old key index
-- (the same leading columns), so a ledger write still updates as many
-- indexes as before.
DROP INDEX inventory_flows_sku;
CREATE INDEX inventory_flows_sku ON inventory_flows (sku_id, id, type, qty);
DROP INDEX account_flows_account;
CREATE INDEX account_flows_account ON account_flows (uid, asset, id, type, qty);
DROP INDEX quota_flows_activity;
CREATE INDEX quota_flows_activity ON quota_flows (activity_id, id, type, qty);
DROP INDEX declared_counter_flows_key;
CREATE INDEX declared_counter_flows_key ON declared_counter_flows (resource_type, biz_key, id, type, qty);

-- +goose Down
DROP INDEX inventory_flows_sku;
CREATE INDEX inventory_flows_sku ON inventory_flows (sku_id, id);
DROP INDEX account_flows_account;
CREATE INDEX account_flows_account ON account_flows (uid, asset, id);
DROP INDEX quota_flows_activity;
CREATE INDEX quota_flows_activity ON quota_flows (activity_id, id);
DROP INDEX declared_counter_flows_key;
CREATE INDEX declared_counter_flows_key ON declared_counter_flows (resource_type, biz_key, id);
