-- +goose Up
-- The whole life of an order (docs/order-life.md): lines shipped, refunded,
-- returned and taken back in by the warehouse, each change under its own
-- ledger epoch; tasks an admin abandons.
--
-- Wider CHECKs first. SQLite changes a CHECK only by rebuilding its table,
-- and orders and release_tasks are referenced by foreign keys; but a CHECK
-- that only grows accepts every row the old one did, so the table's text in
-- sqlite_schema is edited in place, the procedure SQLite's documentation
-- gives for changes that leave the stored rows as they are ("Making Other
-- Kinds Of Table Schema Changes"). RESET reloads this connection's schema;
-- the CREATE TABLE below changes the schema cookie, so every other
-- connection reloads it too. The guard after it fails the migration if any
-- text was not found (a table whose CHECK reads otherwise than 00001's).
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql, 'CHECK (status IN (''PENDING'',''PAID'',''CLOSED'',''REFUND_PENDING''))',
    'CHECK (status IN (''PENDING'',''PAID'',''CLOSED'',''REFUND_PENDING'',''PARTIALLY_SHIPPED'',''SHIPPED'',''PARTIALLY_REFUNDED'',''REFUNDED'',''RETURNING'',''RETURNED''))')
    WHERE type = 'table' AND name = 'orders';
UPDATE sqlite_schema SET sql = replace(sql, 'CHECK (status IN (''PENDING'',''DONE'',''RETRY'',''MANUAL'',''SUPERSEDED''))',
    'CHECK (status IN (''PENDING'',''DONE'',''RETRY'',''MANUAL'',''SUPERSEDED'',''ABANDONED''))')
    WHERE type = 'table' AND name = 'release_tasks';
UPDATE sqlite_schema SET sql = replace(sql, 'CHECK (type IN (''LOCK'',''DEDUCT'',''RELEASE'',''ADJUST''))',
    'CHECK (type IN (''LOCK'',''DEDUCT'',''RELEASE'',''ADJUST'',''REFUND'',''RESTOCK'',''WRITE_OFF''))')
    WHERE type = 'table' AND name IN ('inventory_flows','account_flows','quota_flows','coupon_flows','slot_flows','declared_counter_flows');
PRAGMA writable_schema = RESET;

-- One row per operation of an order's life after placement, kept for
-- good: what was asked (request, canonical JSON) tells a repeat, answered
-- the same, from a second use of one id with another body (409). op_id is
-- the caller's id: a shipment's, a refund's, a return's; an inbound's is
-- its return's; a line cancel's is the order, the line and the version it changed.
-- epoch is the ledger epoch of the rows the operation wrote.
CREATE TABLE order_ops (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    order_no   TEXT    NOT NULL REFERENCES orders (order_no),
    kind       TEXT    NOT NULL CHECK (kind IN ('LINE_CANCEL','SHIP','REFUND','RETURN','INBOUND')),
    op_id      TEXT    NOT NULL,
    epoch      INTEGER NOT NULL,
    request    TEXT    NOT NULL,
    status     TEXT    NOT NULL,
    reason     TEXT    NOT NULL DEFAULT '',
    actor      TEXT    NOT NULL DEFAULT '',
    created_at DATETIME NOT NULL,
    UNIQUE (kind, op_id)
);
CREATE INDEX order_ops_order ON order_ops (order_no, id);
-- An operation's lines; restock is an inbound line's: 1 back to stock, 0
-- written off (other operations write 0).
CREATE TABLE order_op_lines (
    op_row  INTEGER NOT NULL REFERENCES order_ops (id),
    sku_id  TEXT    NOT NULL,
    restock INTEGER NOT NULL DEFAULT 0 CHECK (restock IN (0, 1)),
    qty     INTEGER NOT NULL CHECK (qty > 0),
    PRIMARY KEY (op_row, sku_id, restock)
);
CREATE TEMP TABLE up_00023_guard (n INTEGER CHECK (n = 0));
INSERT INTO up_00023_guard SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND (
    (name = 'orders' AND sql NOT LIKE '%''RETURNED''))%') OR
    (name = 'release_tasks' AND sql NOT LIKE '%''ABANDONED''))%') OR
    (name IN ('inventory_flows','account_flows','quota_flows','coupon_flows','slot_flows','declared_counter_flows')
        AND sql NOT LIKE '%''WRITE_OFF''))%'));
DROP TABLE up_00023_guard;

-- A line (a hold) after payment: of what was deducted, shipped went out
-- and refunded came back to stock before it did; of what was shipped,
-- returned was sent back, and of that the warehouse restocked or wrote off.
-- version counts the line's changes (a line cancel names the one it saw).
ALTER TABLE order_holds ADD COLUMN shipped INTEGER NOT NULL DEFAULT 0 CHECK (shipped >= 0);
ALTER TABLE order_holds ADD COLUMN refunded INTEGER NOT NULL DEFAULT 0 CHECK (refunded >= 0 AND shipped + refunded <= deducted);
ALTER TABLE order_holds ADD COLUMN returned INTEGER NOT NULL DEFAULT 0 CHECK (returned >= 0 AND returned <= shipped);
ALTER TABLE order_holds ADD COLUMN restocked INTEGER NOT NULL DEFAULT 0 CHECK (restocked >= 0);
ALTER TABLE order_holds ADD COLUMN written_off INTEGER NOT NULL DEFAULT 0 CHECK (written_off >= 0 AND restocked + written_off <= returned);
ALTER TABLE order_holds ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
-- The greatest ledger epoch the order's operations used: 0 is placement,
-- payment and close, 1 a late payment; each later operation takes the next.
ALTER TABLE orders ADD COLUMN last_epoch INTEGER NOT NULL DEFAULT 1;

-- +goose Down
-- Going back would leave rows the narrower CHECKs refuse, and lose what
-- the lines say: refused while any exists.
CREATE TEMP TABLE down_00023_guard (n INTEGER CHECK (n = 0));
INSERT INTO down_00023_guard SELECT (SELECT COUNT(*) FROM order_ops)
    + (SELECT COUNT(*) FROM orders WHERE status NOT IN ('PENDING','PAID','CLOSED','REFUND_PENDING'))
    + (SELECT COUNT(*) FROM release_tasks WHERE status = 'ABANDONED')
    + (SELECT COUNT(*) FROM inventory_flows WHERE type IN ('REFUND','RESTOCK','WRITE_OFF'))
    + (SELECT COUNT(*) FROM account_flows WHERE type IN ('REFUND','RESTOCK','WRITE_OFF'))
    + (SELECT COUNT(*) FROM quota_flows WHERE type IN ('REFUND','RESTOCK','WRITE_OFF'))
    + (SELECT COUNT(*) FROM coupon_flows WHERE type IN ('REFUND','RESTOCK','WRITE_OFF'))
    + (SELECT COUNT(*) FROM slot_flows WHERE type IN ('REFUND','RESTOCK','WRITE_OFF'))
    + (SELECT COUNT(*) FROM declared_counter_flows WHERE type IN ('REFUND','RESTOCK','WRITE_OFF'));
DROP TABLE down_00023_guard;
ALTER TABLE orders DROP COLUMN last_epoch;
ALTER TABLE order_holds DROP COLUMN version;
ALTER TABLE order_holds DROP COLUMN written_off;
ALTER TABLE order_holds DROP COLUMN restocked;
ALTER TABLE order_holds DROP COLUMN returned;
ALTER TABLE order_holds DROP COLUMN refunded;
ALTER TABLE order_holds DROP COLUMN shipped;
DROP TABLE order_op_lines;
DROP TABLE order_ops;
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql, ',''PARTIALLY_SHIPPED'',''SHIPPED'',''PARTIALLY_REFUNDED'',''REFUNDED'',''RETURNING'',''RETURNED''', '')
    WHERE type = 'table' AND name = 'orders';
UPDATE sqlite_schema SET sql = replace(sql, ',''ABANDONED''', '') WHERE type = 'table' AND name = 'release_tasks';
UPDATE sqlite_schema SET sql = replace(sql, ',''REFUND'',''RESTOCK'',''WRITE_OFF''', '')
    WHERE type = 'table' AND name IN ('inventory_flows','account_flows','quota_flows','coupon_flows','slot_flows','declared_counter_flows');
PRAGMA writable_schema = RESET;
CREATE TABLE down_00023_cookie (n INTEGER);
DROP TABLE down_00023_cookie;
