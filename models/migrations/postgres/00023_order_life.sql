-- +goose Up
-- The whole life of an order (docs/order-life.md): lines shipped, refunded,
-- returned and taken back in by the warehouse, each change under its own
-- ledger epoch; tasks an admin abandons. The CHECKs grow to the new
-- statuses and ledger row types.
ALTER TABLE orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check CHECK (status IN ('PENDING','PAID','CLOSED','REFUND_PENDING',
    'PARTIALLY_SHIPPED','SHIPPED','PARTIALLY_REFUNDED','REFUNDED','RETURNING','RETURNED'));
ALTER TABLE release_tasks DROP CONSTRAINT release_tasks_status_check;
ALTER TABLE release_tasks ADD CONSTRAINT release_tasks_status_check CHECK (status IN ('PENDING','DONE','RETRY','MANUAL','SUPERSEDED','ABANDONED'));
ALTER TABLE inventory_flows DROP CONSTRAINT inventory_flows_type_check;
ALTER TABLE inventory_flows ADD CONSTRAINT inventory_flows_type_check CHECK (type IN ('LOCK','DEDUCT','RELEASE','ADJUST','REFUND','RESTOCK','WRITE_OFF'));
ALTER TABLE account_flows DROP CONSTRAINT account_flows_type_check;
ALTER TABLE account_flows ADD CONSTRAINT account_flows_type_check CHECK (type IN ('LOCK','DEDUCT','RELEASE','ADJUST','REFUND','RESTOCK','WRITE_OFF'));
ALTER TABLE quota_flows DROP CONSTRAINT quota_flows_type_check;
ALTER TABLE quota_flows ADD CONSTRAINT quota_flows_type_check CHECK (type IN ('LOCK','DEDUCT','RELEASE','ADJUST','REFUND','RESTOCK','WRITE_OFF'));
ALTER TABLE coupon_flows DROP CONSTRAINT coupon_flows_type_check;
ALTER TABLE coupon_flows ADD CONSTRAINT coupon_flows_type_check CHECK (type IN ('LOCK','DEDUCT','RELEASE','ADJUST','REFUND','RESTOCK','WRITE_OFF'));
ALTER TABLE slot_flows DROP CONSTRAINT slot_flows_type_check;
ALTER TABLE slot_flows ADD CONSTRAINT slot_flows_type_check CHECK (type IN ('LOCK','DEDUCT','RELEASE','ADJUST','REFUND','RESTOCK','WRITE_OFF'));
ALTER TABLE declared_counter_flows DROP CONSTRAINT declared_counter_flows_type_check;
ALTER TABLE declared_counter_flows ADD CONSTRAINT declared_counter_flows_type_check CHECK (type IN ('LOCK','DEDUCT','RELEASE','ADJUST','REFUND','RESTOCK','WRITE_OFF'));

-- One row per operation of an order's life after placement, kept for
-- good: what was asked (request, canonical JSON) tells a repeat, answered
-- the same, from a second use of one id with another body (409). op_id is
-- the caller's id: a shipment's, a refund's, a return's; an inbound's is
-- its return's; a line cancel's is the order, the line and the version it changed.
-- epoch is the ledger epoch of the rows the operation wrote.
CREATE TABLE order_ops (
    id         BIGSERIAL PRIMARY KEY,
    order_no   TEXT    NOT NULL REFERENCES orders (order_no),
    kind       TEXT    NOT NULL CHECK (kind IN ('LINE_CANCEL','SHIP','REFUND','RETURN','INBOUND')),
    op_id      TEXT    NOT NULL,
    epoch      INTEGER NOT NULL,
    request    TEXT    NOT NULL,
    status     TEXT    NOT NULL,
    reason     TEXT    NOT NULL DEFAULT '',
    actor      TEXT    NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL,
    UNIQUE (kind, op_id)
);
CREATE INDEX order_ops_order ON order_ops (order_no, id);
-- An operation's lines; restock is an inbound line's: 1 back to stock, 0
-- written off (other operations write 0).
CREATE TABLE order_op_lines (
    op_row  BIGINT  NOT NULL REFERENCES order_ops (id),
    sku_id  TEXT    NOT NULL,
    restock INTEGER NOT NULL DEFAULT 0 CHECK (restock IN (0, 1)),
    qty     BIGINT  NOT NULL CHECK (qty > 0),
    PRIMARY KEY (op_row, sku_id, restock)
);

-- A line (a hold) after payment: of what was deducted, shipped went out
-- and refunded came back to stock before it did; of what was shipped,
-- returned was sent back, and of that the warehouse restocked or wrote off.
-- version counts the line's changes (a line cancel names the one it saw).
ALTER TABLE order_holds
    ADD COLUMN shipped     BIGINT NOT NULL DEFAULT 0 CHECK (shipped >= 0),
    ADD COLUMN refunded    BIGINT NOT NULL DEFAULT 0 CHECK (refunded >= 0),
    ADD COLUMN returned    BIGINT NOT NULL DEFAULT 0 CHECK (returned >= 0),
    ADD COLUMN restocked   BIGINT NOT NULL DEFAULT 0 CHECK (restocked >= 0),
    ADD COLUMN written_off BIGINT NOT NULL DEFAULT 0 CHECK (written_off >= 0),
    ADD COLUMN version     BIGINT NOT NULL DEFAULT 0,
    ADD CONSTRAINT order_holds_shipped_refunded CHECK (shipped + refunded <= deducted),
    ADD CONSTRAINT order_holds_returned CHECK (returned <= shipped),
    ADD CONSTRAINT order_holds_inbound CHECK (restocked + written_off <= returned);
-- The greatest ledger epoch the order's operations used: 0 is placement,
-- payment and close, 1 a late payment; each later operation takes the next.
ALTER TABLE orders ADD COLUMN last_epoch INTEGER NOT NULL DEFAULT 1;

-- +goose Down
-- Going back would leave rows the narrower CHECKs refuse, and lose what
-- the lines say: refused while any exists.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM order_ops)
        OR EXISTS (SELECT 1 FROM orders WHERE status NOT IN ('PENDING','PAID','CLOSED','REFUND_PENDING'))
        OR EXISTS (SELECT 1 FROM release_tasks WHERE status = 'ABANDONED') THEN
        RAISE EXCEPTION '00023 down: orders have a life after payment or abandoned tasks; refusing to drop it';
    END IF;
END $$;
-- +goose StatementEnd
ALTER TABLE orders DROP COLUMN last_epoch;
ALTER TABLE order_holds DROP COLUMN version, DROP COLUMN written_off, DROP COLUMN restocked,
    DROP COLUMN returned, DROP COLUMN refunded, DROP COLUMN shipped;
DROP TABLE order_op_lines;
DROP TABLE order_ops;
ALTER TABLE declared_counter_flows DROP CONSTRAINT declared_counter_flows_type_check;
ALTER TABLE declared_counter_flows ADD CONSTRAINT declared_counter_flows_type_check CHECK (type IN ('LOCK','DEDUCT','RELEASE','ADJUST'));
ALTER TABLE slot_flows DROP CONSTRAINT slot_flows_type_check;
ALTER TABLE slot_flows ADD CONSTRAINT slot_flows_type_check CHECK (type IN ('LOCK','DEDUCT','RELEASE','ADJUST'));
ALTER TABLE coupon_flows DROP CONSTRAINT coupon_flows_type_check;
ALTER TABLE coupon_flows ADD CONSTRAINT coupon_flows_type_check CHECK (type IN ('LOCK','DEDUCT','RELEASE','ADJUST'));
ALTER TABLE quota_flows DROP CONSTRAINT quota_flows_type_check;
ALTER TABLE quota_flows ADD CONSTRAINT quota_flows_type_check CHECK (type IN ('LOCK','DEDUCT','RELEASE','ADJUST'));
ALTER TABLE account_flows DROP CONSTRAINT account_flows_type_check;
ALTER TABLE account_flows ADD CONSTRAINT account_flows_type_check CHECK (type IN ('LOCK','DEDUCT','RELEASE','ADJUST'));
ALTER TABLE inventory_flows DROP CONSTRAINT inventory_flows_type_check;
ALTER TABLE inventory_flows ADD CONSTRAINT inventory_flows_type_check CHECK (type IN ('LOCK','DEDUCT','RELEASE','ADJUST'));
ALTER TABLE release_tasks DROP CONSTRAINT release_tasks_status_check;
ALTER TABLE release_tasks ADD CONSTRAINT release_tasks_status_check CHECK (status IN ('PENDING','DONE','RETRY','MANUAL','SUPERSEDED'));
ALTER TABLE orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check CHECK (status IN ('PENDING','PAID','CLOSED','REFUND_PENDING'));
