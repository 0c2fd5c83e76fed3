-- +goose Up
-- The last request that carried a forwarding header (X-Forwarded-For,
-- X-Real-IP, Forwarded) while the server trusted no proxy: the audit log
-- then records the proxy's address, not the client's. One row, written at
-- most once an hour by each instance (see Store.NoteForwarded); the start
-- of a server without -trusted-proxies and the overview warn about it.
CREATE TABLE forwarded_sightings (
    id           SMALLINT PRIMARY KEY CHECK (id = 1),
    last_seen_at TIMESTAMPTZ NOT NULL,
    peer         TEXT NOT NULL,
    header       TEXT NOT NULL
);

-- +goose Down
DROP TABLE forwarded_sightings;
