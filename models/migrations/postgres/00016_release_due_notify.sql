-- +goose Up
-- Workers of other instances learn that a release task became due from a
-- NOTIFY on unhold_release_due, sent by the database at commit (and
-- deduplicated within the transaction), so no write path has to remember
-- to wake them; the periodic sweep stays the fallback. The payload is the
-- table's schema: the channel is per database, and a listener of another
-- schema (another deployment, a parallel test) ignores it. SQLite has no
-- file here: one process, woken in Go.

-- A close inserts its tasks. A task inserted with a release delay is not
-- due yet; the sweep finds it. The second of slack covers the app's clock,
-- which stamped next_at, running a little ahead of the database's.
-- +goose StatementBegin
CREATE FUNCTION notify_release_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM inserted_tasks
               WHERE status IN ('PENDING','RETRY') AND next_at <= clock_timestamp() + interval '1 second') THEN
        PERFORM pg_notify('unhold_release_due', TG_TABLE_SCHEMA);
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER release_tasks_inserted_notify AFTER INSERT ON release_tasks
    REFERENCING NEW TABLE AS inserted_tasks
    FOR EACH STATEMENT EXECUTE FUNCTION notify_release_inserted();

-- +goose StatementBegin
CREATE FUNCTION notify_release_due() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('unhold_release_due', TG_TABLE_SCHEMA);
    RETURN NULL;
END $$;
-- +goose StatementEnd
-- An update makes a task due when a rerun puts a RETRY or MANUAL task back
-- to PENDING, or when a lease is handed back (ReturnLease, a stopping
-- worker, a lost try counted late) on a task whose time has come. A claim
-- (a lease taken), a DONE, a retry scheduled later, a MANUAL or a
-- SUPERSEDED never fires: those are every release's commit, and waking
-- every worker on each would cost more than the wake-ups save.
CREATE TRIGGER release_tasks_due_notify AFTER UPDATE ON release_tasks
    FOR EACH ROW
    WHEN ((OLD.status IN ('RETRY','MANUAL') AND NEW.status = 'PENDING')
       OR (OLD.lease_token <> '' AND NEW.lease_token = '' AND NEW.status IN ('PENDING','RETRY')
           AND NEW.next_at <= clock_timestamp()))
    EXECUTE FUNCTION notify_release_due();

-- +goose Down
DROP TRIGGER release_tasks_due_notify ON release_tasks;
DROP FUNCTION notify_release_due();
DROP TRIGGER release_tasks_inserted_notify ON release_tasks;
DROP FUNCTION notify_release_inserted();
