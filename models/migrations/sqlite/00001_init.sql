-- +goose Up
-- Times are stored as UTC text in one fixed layout, so text order is time order.

CREATE TABLE orders (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    order_no       TEXT    NOT NULL UNIQUE,
    user_id        TEXT    NOT NULL,
    status         TEXT    NOT NULL CHECK (status IN ('PENDING','PAID','CLOSED','REFUND_PENDING')),
    pay_deadline   DATETIME NOT NULL,
    close_reason   TEXT    NOT NULL DEFAULT '',
    channel_txn_id TEXT    NOT NULL DEFAULT '',
    late_paid      INTEGER NOT NULL DEFAULT 0,
    note           TEXT    NOT NULL DEFAULT '',
    version        INTEGER NOT NULL DEFAULT 0,
    created_at     DATETIME NOT NULL,
    updated_at     DATETIME NOT NULL,
    paid_at        DATETIME,
    closed_at      DATETIME
);
CREATE INDEX orders_status_deadline ON orders (status, pay_deadline);
CREATE INDEX orders_user_created ON orders (user_id, created_at);
CREATE INDEX orders_created ON orders (created_at);

-- One row per resource an order holds: its SKU lines, each coupon, each frozen asset,
-- its quota and its slot. qty is what was taken; released and deducted never exceed it.
CREATE TABLE order_holds (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    order_no      TEXT    NOT NULL REFERENCES orders (order_no),
    resource_type TEXT    NOT NULL,
    biz_key       TEXT    NOT NULL,
    qty           INTEGER NOT NULL CHECK (qty > 0),
    released      INTEGER NOT NULL DEFAULT 0 CHECK (released >= 0),
    deducted      INTEGER NOT NULL DEFAULT 0 CHECK (deducted >= 0),
    CHECK (released + deducted <= qty),
    UNIQUE (order_no, resource_type, biz_key)
);
CREATE INDEX order_holds_resource ON order_holds (resource_type, biz_key);

CREATE VIEW order_items AS
    SELECT id, order_no, biz_key AS sku_id, qty, released, deducted
    FROM order_holds WHERE resource_type = 'inventory';
CREATE VIEW order_coupons AS
    SELECT id, order_no, CAST(biz_key AS INTEGER) AS coupon_id, released, deducted
    FROM order_holds WHERE resource_type = 'coupon';

CREATE TABLE inventory (
    sku_id          TEXT    PRIMARY KEY,
    available       INTEGER NOT NULL CHECK (available >= 0),
    locked          INTEGER NOT NULL DEFAULT 0 CHECK (locked >= 0),
    sold            INTEGER NOT NULL DEFAULT 0 CHECK (sold >= 0),
    release_delay_s INTEGER NOT NULL DEFAULT 0 CHECK (release_delay_s >= 0),
    updated_at      DATETIME NOT NULL
);

CREATE TABLE user_coupons (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    TEXT    NOT NULL,
    owner      TEXT    NOT NULL CHECK (owner IN ('PLATFORM','MERCHANT')),
    status     TEXT    NOT NULL CHECK (status IN ('UNUSED','LOCKED','USED','EXPIRED')),
    order_no   TEXT,
    expire_at  DATETIME NOT NULL,
    created_at DATETIME NOT NULL,
    updated_at DATETIME NOT NULL
);
CREATE INDEX user_coupons_user ON user_coupons (user_id, status);
CREATE INDEX user_coupons_status ON user_coupons (status);

CREATE TABLE accounts (
    uid        TEXT    NOT NULL,
    asset      TEXT    NOT NULL CHECK (asset IN ('BALANCE','POINTS')),
    available  INTEGER NOT NULL DEFAULT 0 CHECK (available >= 0),
    frozen     INTEGER NOT NULL DEFAULT 0 CHECK (frozen >= 0),
    spent      INTEGER NOT NULL DEFAULT 0 CHECK (spent >= 0),
    updated_at DATETIME NOT NULL,
    PRIMARY KEY (uid, asset)
);

CREATE TABLE activity_quotas (
    activity_id TEXT    PRIMARY KEY,
    total       INTEGER NOT NULL CHECK (total >= 0),
    available   INTEGER NOT NULL CHECK (available >= 0),
    locked      INTEGER NOT NULL DEFAULT 0 CHECK (locked >= 0),
    used        INTEGER NOT NULL DEFAULT 0 CHECK (used >= 0),
    updated_at  DATETIME NOT NULL
);

CREATE TABLE slot_holds (
    slot_id    TEXT PRIMARY KEY,
    status     TEXT NOT NULL CHECK (status IN ('FREE','HELD','SOLD')),
    order_no   TEXT,
    updated_at DATETIME NOT NULL
);

CREATE TABLE release_tasks (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    order_no      TEXT    NOT NULL REFERENCES orders (order_no),
    resource_type TEXT    NOT NULL,
    biz_key       TEXT    NOT NULL,
    qty           INTEGER NOT NULL CHECK (qty > 0),
    status        TEXT    NOT NULL CHECK (status IN ('PENDING','DONE','RETRY','MANUAL','SUPERSEDED')),
    trigger_type  TEXT    NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    failures      INTEGER NOT NULL DEFAULT 0,
    next_at       DATETIME NOT NULL,
    last_error    TEXT    NOT NULL DEFAULT '',
    error_class   TEXT    NOT NULL DEFAULT '',
    lease_owner   TEXT    NOT NULL DEFAULT '',
    lease_token   TEXT    NOT NULL DEFAULT '',
    lease_until   DATETIME,
    created_at    DATETIME NOT NULL,
    updated_at    DATETIME NOT NULL,
    done_at       DATETIME,
    UNIQUE (order_no, resource_type, biz_key)
);
CREATE INDEX release_tasks_due ON release_tasks (status, next_at);

CREATE TABLE task_attempts (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id       INTEGER NOT NULL REFERENCES release_tasks (id),
    order_no      TEXT    NOT NULL,
    resource_type TEXT    NOT NULL,
    worker        TEXT    NOT NULL,
    outcome       TEXT    NOT NULL,
    error_class   TEXT    NOT NULL DEFAULT '',
    error         TEXT    NOT NULL DEFAULT '',
    started_at    DATETIME NOT NULL,
    finished_at   DATETIME NOT NULL
);
CREATE INDEX task_attempts_task ON task_attempts (task_id);
CREATE INDEX task_attempts_order ON task_attempts (order_no);

-- Ledgers. A NULL order_no marks a set-up row (ADJUST); NULLs never collide in a unique key.
CREATE TABLE inventory_flows (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    order_no      TEXT,
    sku_id        TEXT    NOT NULL,
    type          TEXT    NOT NULL CHECK (type IN ('LOCK','DEDUCT','RELEASE','ADJUST')),
    epoch         INTEGER NOT NULL DEFAULT 0,
    trigger_type  TEXT    NOT NULL,
    qty           INTEGER NOT NULL,
    avail_before  INTEGER NOT NULL,
    avail_after   INTEGER NOT NULL,
    held_before   INTEGER NOT NULL,
    held_after    INTEGER NOT NULL,
    spent_before  INTEGER NOT NULL,
    spent_after   INTEGER NOT NULL,
    actor         TEXT    NOT NULL DEFAULT '',
    created_at    DATETIME NOT NULL,
    UNIQUE (order_no, sku_id, type, epoch),
    CHECK ((type = 'ADJUST') = (order_no IS NULL))
);
CREATE INDEX inventory_flows_sku ON inventory_flows (sku_id, id);
CREATE INDEX inventory_flows_created ON inventory_flows (created_at);

CREATE TABLE account_flows (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    order_no      TEXT,
    uid           TEXT    NOT NULL,
    asset         TEXT    NOT NULL,
    type          TEXT    NOT NULL CHECK (type IN ('LOCK','DEDUCT','RELEASE','ADJUST')),
    epoch         INTEGER NOT NULL DEFAULT 0,
    trigger_type  TEXT    NOT NULL,
    qty           INTEGER NOT NULL,
    avail_before  INTEGER NOT NULL,
    avail_after   INTEGER NOT NULL,
    held_before   INTEGER NOT NULL,
    held_after    INTEGER NOT NULL,
    spent_before  INTEGER NOT NULL,
    spent_after   INTEGER NOT NULL,
    actor         TEXT    NOT NULL DEFAULT '',
    created_at    DATETIME NOT NULL,
    UNIQUE (order_no, uid, asset, type, epoch),
    CHECK ((type = 'ADJUST') = (order_no IS NULL))
);
CREATE INDEX account_flows_account ON account_flows (uid, asset, id);
CREATE INDEX account_flows_created ON account_flows (created_at);

CREATE TABLE quota_flows (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    order_no      TEXT,
    activity_id   TEXT    NOT NULL,
    type          TEXT    NOT NULL CHECK (type IN ('LOCK','DEDUCT','RELEASE','ADJUST')),
    epoch         INTEGER NOT NULL DEFAULT 0,
    trigger_type  TEXT    NOT NULL,
    qty           INTEGER NOT NULL,
    avail_before  INTEGER NOT NULL,
    avail_after   INTEGER NOT NULL,
    held_before   INTEGER NOT NULL,
    held_after    INTEGER NOT NULL,
    spent_before  INTEGER NOT NULL,
    spent_after   INTEGER NOT NULL,
    actor         TEXT    NOT NULL DEFAULT '',
    created_at    DATETIME NOT NULL,
    UNIQUE (order_no, activity_id, type, epoch),
    CHECK ((type = 'ADJUST') = (order_no IS NULL))
);
CREATE INDEX quota_flows_activity ON quota_flows (activity_id, id);
CREATE INDEX quota_flows_created ON quota_flows (created_at);

CREATE TABLE coupon_flows (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    order_no       TEXT,
    coupon_id      INTEGER NOT NULL,
    user_id        TEXT    NOT NULL,
    owner          TEXT    NOT NULL,
    type           TEXT    NOT NULL CHECK (type IN ('LOCK','DEDUCT','RELEASE','ADJUST')),
    epoch          INTEGER NOT NULL DEFAULT 0,
    trigger_type   TEXT    NOT NULL,
    status_before  TEXT    NOT NULL,
    status_after   TEXT    NOT NULL,
    expire_before  DATETIME,
    expire_after   DATETIME NOT NULL,
    actor          TEXT    NOT NULL DEFAULT '',
    created_at     DATETIME NOT NULL,
    UNIQUE (coupon_id, order_no, type, epoch),
    CHECK ((type = 'ADJUST') = (order_no IS NULL))
);
CREATE INDEX coupon_flows_coupon ON coupon_flows (coupon_id, id);
CREATE INDEX coupon_flows_created ON coupon_flows (created_at);

CREATE TABLE slot_flows (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    order_no       TEXT,
    slot_id        TEXT    NOT NULL,
    type           TEXT    NOT NULL CHECK (type IN ('LOCK','DEDUCT','RELEASE','ADJUST')),
    epoch          INTEGER NOT NULL DEFAULT 0,
    trigger_type   TEXT    NOT NULL,
    status_before  TEXT    NOT NULL,
    status_after   TEXT    NOT NULL,
    actor          TEXT    NOT NULL DEFAULT '',
    created_at     DATETIME NOT NULL,
    UNIQUE (order_no, slot_id, type, epoch),
    CHECK ((type = 'ADJUST') = (order_no IS NULL))
);
CREATE INDEX slot_flows_slot ON slot_flows (slot_id, id);
CREATE INDEX slot_flows_created ON slot_flows (created_at);

CREATE TABLE audit_log (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    actor      TEXT    NOT NULL,
    action     TEXT    NOT NULL,
    target     TEXT    NOT NULL,
    reason     TEXT    NOT NULL DEFAULT '',
    outcome    TEXT    NOT NULL,
    detail     TEXT    NOT NULL DEFAULT '',
    created_at DATETIME NOT NULL
);
CREATE INDEX audit_log_target ON audit_log (target, id);

-- +goose StatementBegin
CREATE TRIGGER inventory_flows_no_update BEFORE UPDATE ON inventory_flows
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER inventory_flows_no_delete BEFORE DELETE ON inventory_flows
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER account_flows_no_update BEFORE UPDATE ON account_flows
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER account_flows_no_delete BEFORE DELETE ON account_flows
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER quota_flows_no_update BEFORE UPDATE ON quota_flows
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER quota_flows_no_delete BEFORE DELETE ON quota_flows
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER coupon_flows_no_update BEFORE UPDATE ON coupon_flows
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER coupon_flows_no_delete BEFORE DELETE ON coupon_flows
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER slot_flows_no_update BEFORE UPDATE ON slot_flows
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER slot_flows_no_delete BEFORE DELETE ON slot_flows
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE audit_log;
DROP TABLE slot_flows;
DROP TABLE coupon_flows;
DROP TABLE quota_flows;
DROP TABLE account_flows;
DROP TABLE inventory_flows;
DROP TABLE task_attempts;
DROP TABLE release_tasks;
DROP TABLE slot_holds;
DROP TABLE activity_quotas;
DROP TABLE accounts;
DROP TABLE user_coupons;
DROP TABLE inventory;
DROP VIEW order_coupons;
DROP VIEW order_items;
DROP TABLE order_holds;
DROP TABLE orders;
