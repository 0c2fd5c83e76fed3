-- +goose Up
-- Stock models and per-user limits (docs/stock-models.md).
--
-- A SKU deducted at payment holds nothing while its order is unpaid: the
-- order's line records what it asks (ordered) with qty 0 until the payment
-- takes it, so every reader of "what is held" (qty - released - deducted)
-- sees nothing to release or reconcile. qty > 0 widens to qty >= 0 by
-- editing the table's text in sqlite_schema, as 00023 did for its CHECKs
-- (a wider CHECK accepts every stored row); the guard fails the migration
-- if the text was not found.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql, 'qty           INTEGER NOT NULL CHECK (qty > 0),',
    'qty           INTEGER NOT NULL CHECK (qty >= 0),')
    WHERE type = 'table' AND name = 'order_holds';
PRAGMA writable_schema = RESET;
CREATE TEMP TABLE up_00024_guard (n INTEGER CHECK (n = 0));
INSERT INTO up_00024_guard SELECT COUNT(*) FROM sqlite_schema
    WHERE type = 'table' AND name = 'order_holds' AND sql NOT LIKE '%CHECK (qty >= 0)%';
DROP TABLE up_00024_guard;

-- deduct_at: 'order' takes the stock at placement (qty = ordered from the
-- start, ordered left 0), 'payment' at payment (qty 0 until then, then
-- ordered). Any other hold is 'order' with qty > 0, as before.
ALTER TABLE order_holds ADD COLUMN deduct_at TEXT NOT NULL DEFAULT 'order' CHECK (deduct_at IN ('order','payment'));
ALTER TABLE order_holds ADD COLUMN ordered INTEGER NOT NULL DEFAULT 0
    CHECK ((deduct_at = 'order' AND qty > 0) OR (deduct_at = 'payment' AND ordered > 0 AND qty IN (0, ordered)));

ALTER TABLE inventory ADD COLUMN deduct_at TEXT NOT NULL DEFAULT 'order' CHECK (deduct_at IN ('order','payment'));
-- A user may place at most per_user_orders orders of the SKU (of the
-- activity) within window_s seconds; 0 is no limit.
ALTER TABLE inventory ADD COLUMN per_user_orders INTEGER NOT NULL DEFAULT 0 CHECK (per_user_orders >= 0);
ALTER TABLE inventory ADD COLUMN window_s INTEGER NOT NULL DEFAULT 0 CHECK (window_s >= 0);
ALTER TABLE activity_quotas ADD COLUMN per_user_orders INTEGER NOT NULL DEFAULT 0 CHECK (per_user_orders >= 0);
ALTER TABLE activity_quotas ADD COLUMN window_s INTEGER NOT NULL DEFAULT 0 CHECK (window_s >= 0);
ALTER TABLE activity_quotas ADD COLUMN release_delay_s INTEGER NOT NULL DEFAULT 0 CHECK (release_delay_s >= 0);

-- +goose Down
-- A line taken at payment cannot be told from one taken at placement
-- once the column is gone, and an unpaid one breaks qty > 0: refused
-- while any exists.
CREATE TEMP TABLE down_00024_guard (n INTEGER CHECK (n = 0));
INSERT INTO down_00024_guard SELECT COUNT(*) FROM order_holds WHERE deduct_at = 'payment';
DROP TABLE down_00024_guard;
ALTER TABLE activity_quotas DROP COLUMN release_delay_s;
ALTER TABLE activity_quotas DROP COLUMN window_s;
ALTER TABLE activity_quotas DROP COLUMN per_user_orders;
ALTER TABLE inventory DROP COLUMN window_s;
ALTER TABLE inventory DROP COLUMN per_user_orders;
ALTER TABLE inventory DROP COLUMN deduct_at;
ALTER TABLE order_holds DROP COLUMN ordered;
ALTER TABLE order_holds DROP COLUMN deduct_at;
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql, 'CHECK (qty >= 0),', 'CHECK (qty > 0),')
    WHERE type = 'table' AND name = 'order_holds';
PRAGMA writable_schema = RESET;
CREATE TABLE down_00024_cookie (n INTEGER);
DROP TABLE down_00024_cookie;
