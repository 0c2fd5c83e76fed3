-- +goose Up
-- The events outbox: what other systems hear of (docs/events.md). A row is
-- written in the transaction that makes its fact true, so an event exists
-- exactly when its fact does; it is read by polling (GET /api/v1/events)
-- and sent to webhook subscribers outside that transaction.
--
-- On SQLite transactions commit one at a time in the order they write, so
-- an event's id is also the order it became visible in: readers page by id.
-- (PostgreSQL's rows are given that order afterwards, in seq: see its file.)
CREATE TABLE events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    type        TEXT     NOT NULL,
    order_no    TEXT     NOT NULL DEFAULT '',
    occurred_at DATETIME NOT NULL,
    data        TEXT     NOT NULL
);
CREATE INDEX events_order ON events (order_no, id) WHERE order_no <> '';
CREATE INDEX events_occurred ON events (occurred_at);

-- +goose Down
DROP TABLE events;
