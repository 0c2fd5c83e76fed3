-- +goose Up
-- The search box (Store.Search) finds orders, users, accounts, SKUs,
-- activities, slots and declared counter keys by a prefix of their key,
-- whatever its case. Each reads a range of lower(key), which SQLite
-- compares byte by byte; a query uses one of these indexes only when it
-- names the same expression. A user's or an account's index carries the
-- key itself too: its search lists distinct keys from the index alone.
CREATE INDEX orders_no_lower ON orders (lower(order_no));
CREATE INDEX orders_user_lower ON orders (lower(user_id), user_id);
CREATE INDEX accounts_uid_lower ON accounts (lower(uid), uid);
CREATE INDEX inventory_sku_lower ON inventory (lower(sku_id));
CREATE INDEX activity_quotas_lower ON activity_quotas (lower(activity_id));
CREATE INDEX slot_holds_lower ON slot_holds (lower(slot_id));
CREATE INDEX declared_counters_lower ON declared_counters (resource_type, lower(biz_key));

-- +goose Down
DROP INDEX declared_counters_lower;
DROP INDEX slot_holds_lower;
DROP INDEX activity_quotas_lower;
DROP INDEX inventory_sku_lower;
DROP INDEX accounts_uid_lower;
DROP INDEX orders_user_lower;
DROP INDEX orders_no_lower;
