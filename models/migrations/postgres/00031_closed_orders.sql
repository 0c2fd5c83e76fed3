-- +goose Up
-- The orders list's close-date filter (closed from, closed to) reads the
-- closed orders of a range of days from this index, and counts them from
-- it alone. Only an order that was closed has a closed_at (a late payment
-- keeps it): PENDING and PAID orders, most of a shop, are not in it. A
-- range on closed_at implies it is not NULL, so both engines use the index
-- for either bound.
CREATE INDEX orders_closed ON orders (closed_at) WHERE closed_at IS NOT NULL;

-- +goose Down
DROP INDEX orders_closed;
