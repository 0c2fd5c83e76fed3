-- +goose Up
-- Owners of the manual queue: an operator takes a MANUAL task or an open
-- ticket ("mine"), hands it to another or lets it go. The owner is written
-- by its own compare-and-set on these columns alone, never with updated_at,
-- status or next_at, which the worker's and the ageing's reads rely on. It
-- is kept when the item leaves the queue, as history; the pages and the
-- owner filter show it only while the item is open.
ALTER TABLE release_tasks ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE release_tasks ADD COLUMN owned_since DATETIME;
ALTER TABLE recon_diffs ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE recon_diffs ADD COLUMN owned_since DATETIME;
-- "owner=alice" reads her items from here; "nobody" is the MANUAL status
-- index's work.
CREATE INDEX release_tasks_owner ON release_tasks (owner, status) WHERE owner <> '';
CREATE INDEX recon_diffs_owner ON recon_diffs (owner, status) WHERE owner <> '';

-- Notes on a task or a ticket: who, when, what. Append-only, as the
-- ledgers and the audit log are: a note is what someone said then.
CREATE TABLE item_notes (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    item_kind  TEXT     NOT NULL CHECK (item_kind IN ('task', 'ticket')),
    item_id    INTEGER  NOT NULL,
    order_no   TEXT     NOT NULL DEFAULT '',
    author     TEXT     NOT NULL,
    text       TEXT     NOT NULL,
    created_at DATETIME NOT NULL
);
CREATE INDEX item_notes_item ON item_notes (item_kind, item_id, id);
CREATE INDEX item_notes_order ON item_notes (order_no, id) WHERE order_no <> '';
-- +goose StatementBegin
CREATE TRIGGER item_notes_no_update BEFORE UPDATE ON item_notes
BEGIN SELECT RAISE(ABORT, 'notes are append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER item_notes_no_delete BEFORE DELETE ON item_notes
BEGIN SELECT RAISE(ABORT, 'notes are append-only'); END;
-- +goose StatementEnd
-- A REPLACE on a note's id would delete it without the delete trigger
-- (00013 says why).
-- +goose StatementBegin
CREATE TRIGGER item_notes_no_replace BEFORE INSERT ON item_notes
WHEN EXISTS (SELECT 1 FROM item_notes WHERE id = NEW.id)
BEGIN SELECT RAISE(ABORT, 'notes are append-only'); END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE item_notes;
DROP INDEX recon_diffs_owner;
DROP INDEX release_tasks_owner;
ALTER TABLE recon_diffs DROP COLUMN owned_since;
ALTER TABLE recon_diffs DROP COLUMN owner;
ALTER TABLE release_tasks DROP COLUMN owned_since;
ALTER TABLE release_tasks DROP COLUMN owner;
