-- +goose Up
-- Append-only against SQLite's side door: INSERT OR REPLACE (and REPLACE
-- INTO) deletes the row it conflicts with, and the no_delete triggers do
-- not fire for that delete unless the connection turned recursive_triggers
-- on, which the sqlite3 CLI does not. So inserts are guarded, for every
-- connection: a new row whose id is taken is refused, and one whose ledger
-- key is taken is dropped (RAISE(IGNORE)), which is what our
-- INSERT ... ON CONFLICT DO NOTHING does anyway: it still reports 0 rows,
-- the duplicate, and a REPLACE leaves the row it aimed at as it was.
-- +goose StatementBegin
CREATE TRIGGER inventory_flows_no_replace BEFORE INSERT ON inventory_flows
WHEN EXISTS (SELECT 1 FROM inventory_flows WHERE id = NEW.id)
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER inventory_flows_keep_key BEFORE INSERT ON inventory_flows
WHEN EXISTS (SELECT 1 FROM inventory_flows WHERE order_no = NEW.order_no AND sku_id = NEW.sku_id AND type = NEW.type AND epoch = NEW.epoch)
BEGIN SELECT RAISE(IGNORE); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER account_flows_no_replace BEFORE INSERT ON account_flows
WHEN EXISTS (SELECT 1 FROM account_flows WHERE id = NEW.id)
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER account_flows_keep_key BEFORE INSERT ON account_flows
WHEN EXISTS (SELECT 1 FROM account_flows WHERE order_no = NEW.order_no AND uid = NEW.uid AND asset = NEW.asset AND type = NEW.type AND epoch = NEW.epoch)
BEGIN SELECT RAISE(IGNORE); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER quota_flows_no_replace BEFORE INSERT ON quota_flows
WHEN EXISTS (SELECT 1 FROM quota_flows WHERE id = NEW.id)
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER quota_flows_keep_key BEFORE INSERT ON quota_flows
WHEN EXISTS (SELECT 1 FROM quota_flows WHERE order_no = NEW.order_no AND activity_id = NEW.activity_id AND type = NEW.type AND epoch = NEW.epoch)
BEGIN SELECT RAISE(IGNORE); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER coupon_flows_no_replace BEFORE INSERT ON coupon_flows
WHEN EXISTS (SELECT 1 FROM coupon_flows WHERE id = NEW.id)
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER coupon_flows_keep_key BEFORE INSERT ON coupon_flows
WHEN EXISTS (SELECT 1 FROM coupon_flows WHERE coupon_id = NEW.coupon_id AND order_no = NEW.order_no AND type = NEW.type AND epoch = NEW.epoch)
BEGIN SELECT RAISE(IGNORE); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER slot_flows_no_replace BEFORE INSERT ON slot_flows
WHEN EXISTS (SELECT 1 FROM slot_flows WHERE id = NEW.id)
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER slot_flows_keep_key BEFORE INSERT ON slot_flows
WHEN EXISTS (SELECT 1 FROM slot_flows WHERE order_no = NEW.order_no AND slot_id = NEW.slot_id AND type = NEW.type AND epoch = NEW.epoch)
BEGIN SELECT RAISE(IGNORE); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER audit_log_no_replace BEFORE INSERT ON audit_log
WHEN EXISTS (SELECT 1 FROM audit_log WHERE id = NEW.id)
BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;
-- +goose StatementEnd

-- A balance never passes models.MaxBalance (10^15, in the asset's smallest
-- unit): Credit refuses a credit that would, and this CHECK holds whatever
-- writes the row. SQLite adds a CHECK only by rebuilding the table; accounts
-- has no index but its key, no trigger and no foreign key either way.
CREATE TABLE accounts_bounded (
    uid        TEXT    NOT NULL,
    asset      TEXT    NOT NULL CHECK (asset IN ('BALANCE','POINTS')),
    available  INTEGER NOT NULL DEFAULT 0 CHECK (available >= 0 AND available <= 1000000000000000),
    frozen     INTEGER NOT NULL DEFAULT 0 CHECK (frozen >= 0 AND frozen <= 1000000000000000),
    spent      INTEGER NOT NULL DEFAULT 0 CHECK (spent >= 0 AND spent <= 1000000000000000),
    updated_at DATETIME NOT NULL,
    PRIMARY KEY (uid, asset)
);
INSERT INTO accounts_bounded (uid, asset, available, frozen, spent, updated_at)
    SELECT uid, asset, available, frozen, spent, updated_at FROM accounts;
DROP TABLE accounts;
ALTER TABLE accounts_bounded RENAME TO accounts;

-- +goose Down
CREATE TABLE accounts_unbounded (
    uid        TEXT    NOT NULL,
    asset      TEXT    NOT NULL CHECK (asset IN ('BALANCE','POINTS')),
    available  INTEGER NOT NULL DEFAULT 0 CHECK (available >= 0),
    frozen     INTEGER NOT NULL DEFAULT 0 CHECK (frozen >= 0),
    spent      INTEGER NOT NULL DEFAULT 0 CHECK (spent >= 0),
    updated_at DATETIME NOT NULL,
    PRIMARY KEY (uid, asset)
);
INSERT INTO accounts_unbounded (uid, asset, available, frozen, spent, updated_at)
    SELECT uid, asset, available, frozen, spent, updated_at FROM accounts;
DROP TABLE accounts;
ALTER TABLE accounts_unbounded RENAME TO accounts;
DROP TRIGGER audit_log_no_replace;
DROP TRIGGER slot_flows_keep_key;
DROP TRIGGER slot_flows_no_replace;
DROP TRIGGER coupon_flows_keep_key;
DROP TRIGGER coupon_flows_no_replace;
DROP TRIGGER quota_flows_keep_key;
DROP TRIGGER quota_flows_no_replace;
DROP TRIGGER account_flows_keep_key;
DROP TRIGGER account_flows_no_replace;
DROP TRIGGER inventory_flows_keep_key;
DROP TRIGGER inventory_flows_no_replace;
