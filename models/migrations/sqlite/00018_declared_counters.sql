-- +goose Up
-- Counters a shop declares in its resources file (docs/resources-file.md)
-- instead of writing code: every declared counter type keeps its rows in
-- one table and one ledger, narrowed to its own by resource_type, as
-- balance and points share accounts by asset. The ledger's own type column
-- is the row's kind (LOCK, DEDUCT, RELEASE, ADJUST), as in every ledger.
CREATE TABLE declared_counters (
    resource_type TEXT    NOT NULL,
    biz_key       TEXT    NOT NULL,
    available     INTEGER NOT NULL DEFAULT 0 CHECK (available >= 0),
    locked        INTEGER NOT NULL DEFAULT 0 CHECK (locked >= 0),
    spent         INTEGER NOT NULL DEFAULT 0 CHECK (spent >= 0),
    updated_at    DATETIME NOT NULL,
    PRIMARY KEY (resource_type, biz_key)
);

-- A NULL order_no marks a set-up row (ADJUST); NULLs never collide in a unique key.
CREATE TABLE declared_counter_flows (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    order_no      TEXT,
    resource_type TEXT    NOT NULL,
    biz_key       TEXT    NOT NULL,
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
    UNIQUE (order_no, resource_type, biz_key, type, epoch),
    CHECK ((type = 'ADJUST') = (order_no IS NULL))
);
-- The same indexes as the other counters' ledgers: a key's rows in order,
-- a day's rows for the daily report (00005), and each key's ADJUST sum for
-- reconciliation (00004).
CREATE INDEX declared_counter_flows_key ON declared_counter_flows (resource_type, biz_key, id);
CREATE INDEX declared_counter_flows_created ON declared_counter_flows (created_at, resource_type, type, qty);
CREATE INDEX declared_counter_flows_adjust ON declared_counter_flows (resource_type, biz_key, qty) WHERE type = 'ADJUST';

-- Append-only, as every ledger (00001), also against INSERT OR REPLACE (00013).
-- +goose StatementBegin
CREATE TRIGGER declared_counter_flows_no_update BEFORE UPDATE ON declared_counter_flows
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER declared_counter_flows_no_delete BEFORE DELETE ON declared_counter_flows
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER declared_counter_flows_no_replace BEFORE INSERT ON declared_counter_flows
WHEN EXISTS (SELECT 1 FROM declared_counter_flows WHERE id = NEW.id)
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER declared_counter_flows_keep_key BEFORE INSERT ON declared_counter_flows
WHEN EXISTS (SELECT 1 FROM declared_counter_flows WHERE order_no = NEW.order_no AND resource_type = NEW.resource_type
    AND biz_key = NEW.biz_key AND type = NEW.type AND epoch = NEW.epoch)
BEGIN SELECT RAISE(IGNORE); END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE declared_counter_flows;
DROP TABLE declared_counters;
