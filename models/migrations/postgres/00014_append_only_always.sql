-- +goose Up
-- session_replication_role = replica (what pg_restore --disable-triggers
-- and replication tools set, open to a superuser or a role granted SET on
-- it) switches off every trigger that is not ENABLE ALWAYS. The append-only
-- guards must hold in such a session too: each trigger that runs
-- reject_append_only_change() fires always. (SQLite has no such setting in
-- its SQL; its own side door, the sqlite3 tool's .dbconfig, is beyond what a
-- trigger can refuse.)
-- +goose StatementBegin
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT c.relname AS tbl, t.tgname AS trg
        FROM pg_trigger t
        JOIN pg_class c ON c.oid = t.tgrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        JOIN pg_proc p ON p.oid = t.tgfoid
        WHERE NOT t.tgisinternal AND p.proname = 'reject_append_only_change'
          AND n.nspname = current_schema()
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ALWAYS TRIGGER %I', r.tbl, r.trg);
    END LOOP;
END $$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT c.relname AS tbl, t.tgname AS trg
        FROM pg_trigger t
        JOIN pg_class c ON c.oid = t.tgrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        JOIN pg_proc p ON p.oid = t.tgfoid
        WHERE NOT t.tgisinternal AND p.proname = 'reject_append_only_change'
          AND n.nspname = current_schema()
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE TRIGGER %I', r.tbl, r.trg);
    END LOOP;
END $$;
-- +goose StatementEnd
