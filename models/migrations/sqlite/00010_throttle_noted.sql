-- +goose Up
-- The lock end whose first refusal is already audited: later refusals of
-- the same lock are answered without writing anything, so a flood of
-- throttled logins cannot grow the audit log or hold the one writer.
ALTER TABLE login_throttle ADD COLUMN noted_until DATETIME;

-- +goose Down
ALTER TABLE login_throttle DROP COLUMN noted_until;
