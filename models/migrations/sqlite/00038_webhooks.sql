-- +goose Up
-- Webhook subscribers and what is sent to them (docs/webhooks.md).
--
-- A subscription reads the events outbox from its cursor, an events
-- position (the events' id here, their seq on PostgreSQL): the events
-- after it that it asked for become its deliveries, in one transaction
-- with the cursor's move. A delivery is sent by a worker under a lease
-- (owner, token, until) and its outcome is written only while the token
-- is still the delivery's. Deleting a subscription deletes its deliveries.
CREATE TABLE webhook_subscriptions (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    url           TEXT     NOT NULL,
    secret        TEXT     NOT NULL,
    types         TEXT     NOT NULL DEFAULT '', -- comma-separated; '' is every type
    created_by    TEXT     NOT NULL,
    created_at    DATETIME NOT NULL,
    paused_at     DATETIME,
    paused_reason TEXT     NOT NULL DEFAULT '',
    failing_since DATETIME,
    event_cursor  INTEGER  NOT NULL DEFAULT 0
);

CREATE TABLE webhook_deliveries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    subscription_id INTEGER  NOT NULL REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
    event_id        INTEGER  NOT NULL, -- the event's position: its id as readers see it
    event_type      TEXT     NOT NULL,
    order_no        TEXT     NOT NULL DEFAULT '',
    status          TEXT     NOT NULL CHECK (status IN ('PENDING','RETRY','DELIVERED','FAILED')),
    tries           INTEGER  NOT NULL DEFAULT 0,
    next_at         DATETIME NOT NULL,
    lease_owner     TEXT     NOT NULL DEFAULT '',
    lease_token     TEXT     NOT NULL DEFAULT '',
    lease_until     DATETIME,
    last_status     INTEGER  NOT NULL DEFAULT 0,
    last_error      TEXT     NOT NULL DEFAULT '',
    last_answer     TEXT     NOT NULL DEFAULT '',
    created_at      DATETIME NOT NULL,
    updated_at      DATETIME NOT NULL,
    delivered_at    DATETIME,
    UNIQUE (subscription_id, event_id)
);
-- The deliveries still to send, in claim order.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at, id) WHERE status IN ('PENDING','RETRY');
-- An order's earlier undelivered events, which hold its later ones back.
CREATE INDEX webhook_deliveries_order ON webhook_deliveries (subscription_id, order_no, event_id)
    WHERE status IN ('PENDING','RETRY') AND order_no <> '';
-- One subscription's page of deliveries, newest first, of every status
-- and of one; its counts by status (the list, the metrics at each scrape).
CREATE INDEX webhook_deliveries_sub ON webhook_deliveries (subscription_id, id);
CREATE INDEX webhook_deliveries_sub_status ON webhook_deliveries (subscription_id, status, id);
-- The cleanup.
CREATE INDEX webhook_deliveries_delivered ON webhook_deliveries (delivered_at) WHERE status = 'DELIVERED';

-- +goose Down
DROP TABLE webhook_deliveries;
DROP TABLE webhook_subscriptions;
