-- +goose Up
-- The search box (Store.Search) finds orders, users, accounts, SKUs,
-- activities, slots and declared counter keys by a prefix of their key,
-- whatever its case. Each reads a range of lower(key) in byte order, so
-- these indexes sort lower(key) under the "C" collation, whatever the
-- database's is; the query names the same collation. A user's or an
-- account's index carries the key itself too: its search lists distinct
-- keys from the index alone.
CREATE INDEX orders_no_lower ON orders ((lower(order_no)) COLLATE "C");
CREATE INDEX orders_user_lower ON orders ((lower(user_id)) COLLATE "C", user_id);
CREATE INDEX accounts_uid_lower ON accounts ((lower(uid)) COLLATE "C", uid);
CREATE INDEX inventory_sku_lower ON inventory ((lower(sku_id)) COLLATE "C");
CREATE INDEX activity_quotas_lower ON activity_quotas ((lower(activity_id)) COLLATE "C");
CREATE INDEX slot_holds_lower ON slot_holds ((lower(slot_id)) COLLATE "C");
CREATE INDEX declared_counters_lower ON declared_counters (resource_type, (lower(biz_key)) COLLATE "C");

-- +goose Down
DROP INDEX declared_counters_lower;
DROP INDEX slot_holds_lower;
DROP INDEX activity_quotas_lower;
DROP INDEX inventory_sku_lower;
DROP INDEX accounts_uid_lower;
DROP INDEX orders_user_lower;
DROP INDEX orders_no_lower;
