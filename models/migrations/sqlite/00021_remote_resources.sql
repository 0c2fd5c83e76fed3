-- +goose Up
-- Resource types whose holds another team's service keeps
-- (docs/remote-resources.md). unhold calls the service outside its
-- transactions and keeps, here, its own ledger of the calls: a LOCK row is
-- written with the order's hold, before the lock is sent (answer 'SENT'), so
-- that whatever happens to the call the ledger already says the service
-- may hold it; a DEDUCT or RELEASE row is written when the service answered
-- (answer: the HTTP status, or '409 ALREADY_DONE' when it had done the call
-- before), in the transaction that marks its task DONE. The unique key is
-- every ledger's: one row of a type per order, key and epoch.
CREATE TABLE remote_flows (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    order_no        TEXT    NOT NULL,
    resource_type   TEXT    NOT NULL,
    biz_key         TEXT    NOT NULL,
    type            TEXT    NOT NULL CHECK (type IN ('LOCK','DEDUCT','RELEASE')),
    epoch           INTEGER NOT NULL DEFAULT 0,
    trigger_type    TEXT    NOT NULL,
    qty             INTEGER NOT NULL CHECK (qty > 0),
    idempotency_key TEXT    NOT NULL,
    answer          TEXT    NOT NULL,
    actor           TEXT    NOT NULL DEFAULT '',
    created_at      DATETIME NOT NULL,
    UNIQUE (order_no, resource_type, biz_key, type, epoch)
);
-- A key's rows in order (its page, reconciliation's sums), and a day's rows
-- for the daily report, as the other ledgers have.
CREATE INDEX remote_flows_key ON remote_flows (resource_type, biz_key, id);
CREATE INDEX remote_flows_created ON remote_flows (created_at, resource_type, type, qty);

-- Append-only, as every ledger (00001), also against INSERT OR REPLACE (00013).
-- +goose StatementBegin
CREATE TRIGGER remote_flows_no_update BEFORE UPDATE ON remote_flows
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER remote_flows_no_delete BEFORE DELETE ON remote_flows
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER remote_flows_no_replace BEFORE INSERT ON remote_flows
WHEN EXISTS (SELECT 1 FROM remote_flows WHERE id = NEW.id)
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;
-- +goose StatementEnd
-- A row's key is never NULL here, as it may be in the other ledgers (their
-- set-up rows): the replace of a row's own id, which matches its key too, is
-- left to no_replace to refuse, whichever of the two SQLite fires first.
-- +goose StatementBegin
CREATE TRIGGER remote_flows_keep_key BEFORE INSERT ON remote_flows
WHEN NOT EXISTS (SELECT 1 FROM remote_flows WHERE id = NEW.id)
    AND EXISTS (SELECT 1 FROM remote_flows WHERE order_no = NEW.order_no AND resource_type = NEW.resource_type
    AND biz_key = NEW.biz_key AND type = NEW.type AND epoch = NEW.epoch)
BEGIN SELECT RAISE(IGNORE); END;
-- +goose StatementEnd

-- A task of the outbox either releases what its order holds or, for a
-- remote type, deducts it: a payment cannot call the service inside its
-- transaction, so it writes a DEDUCT task that the worker calls and records.
ALTER TABLE release_tasks ADD COLUMN op TEXT NOT NULL DEFAULT 'RELEASE' CHECK (op IN ('RELEASE','DEDUCT'));

-- When every lock of an order's remote holds was answered done: a payment
-- before that (a caller that chose the order number and did not wait) is
-- refused, so no order is paid for a hold its service may never take.
ALTER TABLE orders ADD COLUMN locks_answered_at DATETIME;

-- +goose Down
-- Going back would turn a paid order's DEDUCT task into a RELEASE (the
-- column's absence reads as one) and drop the ledger of calls: refused
-- while either holds a row. The CHECK of this temporary table fails the
-- migration then.
CREATE TEMP TABLE down_00021_guard (n INTEGER CHECK (n = 0));
INSERT INTO down_00021_guard SELECT (SELECT COUNT(*) FROM remote_flows) + (SELECT COUNT(*) FROM release_tasks WHERE op = 'DEDUCT');
DROP TABLE down_00021_guard;
ALTER TABLE orders DROP COLUMN locks_answered_at;
ALTER TABLE release_tasks DROP COLUMN op;
DROP TABLE remote_flows;
