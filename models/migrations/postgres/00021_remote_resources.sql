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
    id              BIGSERIAL PRIMARY KEY,
    order_no        TEXT    NOT NULL,
    resource_type   TEXT    NOT NULL,
    biz_key         TEXT    NOT NULL,
    type            TEXT    NOT NULL CHECK (type IN ('LOCK','DEDUCT','RELEASE')),
    epoch           INTEGER NOT NULL DEFAULT 0,
    trigger_type    TEXT    NOT NULL,
    qty             BIGINT  NOT NULL CHECK (qty > 0),
    idempotency_key TEXT    NOT NULL,
    answer          TEXT    NOT NULL,
    actor           TEXT    NOT NULL DEFAULT '',
    created_at      TIMESTAMPTZ NOT NULL,
    UNIQUE (order_no, resource_type, biz_key, type, epoch)
);
-- A key's rows in order (its page, reconciliation's sums), and a day's rows
-- for the daily report, as the other ledgers have.
CREATE INDEX remote_flows_key ON remote_flows (resource_type, biz_key, id);
CREATE INDEX remote_flows_created ON remote_flows (created_at, resource_type, type, qty);

-- Append-only, as every ledger: no UPDATE or DELETE (00001), no TRUNCATE
-- (00013), and in a session_replication_role = replica too (00014).
CREATE TRIGGER remote_flows_append_only BEFORE UPDATE OR DELETE ON remote_flows
    FOR EACH ROW EXECUTE FUNCTION reject_append_only_change();
CREATE TRIGGER remote_flows_no_truncate BEFORE TRUNCATE ON remote_flows
    FOR EACH STATEMENT EXECUTE FUNCTION reject_append_only_change();
ALTER TABLE remote_flows ENABLE ALWAYS TRIGGER remote_flows_append_only;
ALTER TABLE remote_flows ENABLE ALWAYS TRIGGER remote_flows_no_truncate;

-- A task of the outbox either releases what its order holds or, for a
-- remote type, deducts it: a payment cannot call the service inside its
-- transaction, so it writes a DEDUCT task that the worker calls and records.
ALTER TABLE release_tasks ADD COLUMN op TEXT NOT NULL DEFAULT 'RELEASE' CHECK (op IN ('RELEASE','DEDUCT'));

-- When every lock of an order's remote holds was answered done: a payment
-- before that (a caller that chose the order number and did not wait) is
-- refused, so no order is paid for a hold its service may never take.
ALTER TABLE orders ADD COLUMN locks_answered_at TIMESTAMPTZ;

-- +goose Down
-- Going back would turn a paid order's DEDUCT task into a RELEASE (the
-- column's absence reads as one) and drop the ledger of calls: refused
-- while either holds a row.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM remote_flows) OR EXISTS (SELECT 1 FROM release_tasks WHERE op = 'DEDUCT') THEN
        RAISE EXCEPTION 'migration 00021 down refused: remote_flows or DEDUCT tasks hold rows that going back would lose';
    END IF;
END
$$;
-- +goose StatementEnd
ALTER TABLE orders DROP COLUMN locks_answered_at;
ALTER TABLE release_tasks DROP COLUMN op;
DROP TABLE remote_flows;
