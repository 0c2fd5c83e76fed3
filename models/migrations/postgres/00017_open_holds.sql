-- +goose Up
-- What PENDING orders still hold of some keys (the stock pages' locked
-- check, the chain's) is read from the open holds of those keys, then each
-- one's order status: both indexes cover what the read needs, so it never
-- visits a table, and a popular key's released or paid holds are not in
-- the first index at all. A query uses the first only when its WHERE
-- repeats the condition.
CREATE INDEX order_holds_open ON order_holds (resource_type, biz_key, order_no, qty, released, deducted)
    WHERE qty > released + deducted;
CREATE INDEX orders_no_status ON orders (order_no, status);

-- +goose Down
DROP INDEX orders_no_status;
DROP INDEX order_holds_open;
