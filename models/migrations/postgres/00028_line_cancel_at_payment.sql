-- +goose Up
-- A line deducted at payment may be cancelled whole before its payment
-- (docs/order-life.md): what it orders goes down to 0, and the payment
-- then takes nothing.
ALTER TABLE order_holds DROP CONSTRAINT order_holds_deduct_at_qty;
ALTER TABLE order_holds ADD CONSTRAINT order_holds_deduct_at_qty
    CHECK ((deduct_at = 'order' AND qty > 0) OR (deduct_at = 'payment' AND ordered >= 0 AND qty IN (0, ordered)));

-- +goose Down
-- Refused while a line is cancelled whole: it would break ordered > 0.
-- +goose StatementBegin
DO $$ BEGIN
    IF EXISTS (SELECT 1 FROM order_holds WHERE deduct_at = 'payment' AND ordered = 0) THEN
        RAISE EXCEPTION 'order lines deducted at payment and cancelled whole exist';
    END IF;
END $$;
-- +goose StatementEnd
ALTER TABLE order_holds DROP CONSTRAINT order_holds_deduct_at_qty;
ALTER TABLE order_holds ADD CONSTRAINT order_holds_deduct_at_qty
    CHECK ((deduct_at = 'order' AND qty > 0) OR (deduct_at = 'payment' AND ordered > 0 AND qty IN (0, ordered)));
