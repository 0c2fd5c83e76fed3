-- +goose Up
-- One ticket per key: reconciliation groups the checks that disagree on
-- one key (a hand edit of held trips HELD, LEDGER_HELD and CONSERVATION
-- at once) into one ticket, which lists them in checks, a JSON array of
-- {"check", "expected", "actual"}; check_name, expected and actual keep
-- the first of them (HELD when it is among them), so lists, filters and
-- counts read as before. A ticket opened before this migration has checks
-- = '' and its one check in check_name; the next run that finds its key
-- closes it in favour of the key's grouped ticket.
ALTER TABLE recon_diffs ADD COLUMN checks TEXT NOT NULL DEFAULT '';
DROP INDEX recon_diffs_open;
CREATE UNIQUE INDEX recon_diffs_open ON recon_diffs (resource_type, biz_key, check_name) WHERE status <> 'RESOLVED' AND checks = '';
CREATE UNIQUE INDEX recon_diffs_open_key ON recon_diffs (resource_type, biz_key) WHERE status <> 'RESOLVED' AND checks <> '';

-- +goose Down
DROP INDEX recon_diffs_open_key;
DROP INDEX recon_diffs_open;
CREATE UNIQUE INDEX recon_diffs_open ON recon_diffs (resource_type, biz_key, check_name) WHERE status <> 'RESOLVED';
ALTER TABLE recon_diffs DROP COLUMN checks;
