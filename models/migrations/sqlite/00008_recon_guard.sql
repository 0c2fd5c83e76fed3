-- +goose Up
-- Ticket lists filtered by sign stay on an index on a big ticket history.
CREATE INDEX recon_diffs_sign ON recon_diffs (status, resource_type, sign, id);
-- At most one reconciliation runs at a time, whoever started it.
CREATE UNIQUE INDEX recon_runs_one_running ON recon_runs (status) WHERE status = 'RUNNING';

-- +goose Down
DROP INDEX recon_runs_one_running;
DROP INDEX recon_diffs_sign;
