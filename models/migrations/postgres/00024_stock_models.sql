-- +goose Up
-- Stock models and per-user limits (docs/stock-models.md).
--
-- A SKU deducted at payment holds nothing while its order is unpaid: the
-- order's line records what it asks (ordered) with qty 0 until the payment
-- takes it, so every reader of "what is held" (qty - released - deducted)
-- sees nothing to release or reconcile.
ALTER TABLE order_holds DROP CONSTRAINT order_holds_qty_check;
ALTER TABLE order_holds ADD CONSTRAINT order_holds_qty_check CHECK (qty >= 0);
-- deduct_at: 'order' takes the stock at placement (qty = ordered from the
-- start, ordered left 0), 'payment' at payment (qty 0 until then, then
-- ordered). Any other hold is 'order' with qty > 0, as before.
ALTER TABLE order_holds
    ADD COLUMN deduct_at TEXT NOT NULL DEFAULT 'order' CHECK (deduct_at IN ('order','payment')),
    ADD COLUMN ordered BIGINT NOT NULL DEFAULT 0,
    ADD CONSTRAINT order_holds_deduct_at_qty
        CHECK ((deduct_at = 'order' AND qty > 0) OR (deduct_at = 'payment' AND ordered > 0 AND qty IN (0, ordered)));

-- A user may place at most per_user_orders orders of the SKU (of the
-- activity) within window_s seconds; 0 is no limit.
ALTER TABLE inventory
    ADD COLUMN deduct_at TEXT NOT NULL DEFAULT 'order' CHECK (deduct_at IN ('order','payment')),
    ADD COLUMN per_user_orders BIGINT NOT NULL DEFAULT 0 CHECK (per_user_orders >= 0),
    ADD COLUMN window_s BIGINT NOT NULL DEFAULT 0 CHECK (window_s >= 0);
ALTER TABLE activity_quotas
    ADD COLUMN per_user_orders BIGINT NOT NULL DEFAULT 0 CHECK (per_user_orders >= 0),
    ADD COLUMN window_s BIGINT NOT NULL DEFAULT 0 CHECK (window_s >= 0),
    ADD COLUMN release_delay_s BIGINT NOT NULL DEFAULT 0 CHECK (release_delay_s >= 0);

-- +goose Down
-- Refused while an order's line is taken at payment: without the column
-- it reads as taken at placement, and an unpaid one breaks qty > 0.
-- +goose StatementBegin
DO $$ BEGIN
    IF EXISTS (SELECT 1 FROM order_holds WHERE deduct_at = 'payment') THEN
        RAISE EXCEPTION 'order lines deducted at payment exist';
    END IF;
END $$;
-- +goose StatementEnd
ALTER TABLE activity_quotas DROP COLUMN release_delay_s, DROP COLUMN window_s, DROP COLUMN per_user_orders;
ALTER TABLE inventory DROP COLUMN window_s, DROP COLUMN per_user_orders, DROP COLUMN deduct_at;
ALTER TABLE order_holds DROP CONSTRAINT order_holds_deduct_at_qty, DROP COLUMN ordered, DROP COLUMN deduct_at;
ALTER TABLE order_holds DROP CONSTRAINT order_holds_qty_check;
ALTER TABLE order_holds ADD CONSTRAINT order_holds_qty_check CHECK (qty > 0);
