-- +goose Up
-- Append-only against PostgreSQL's side door: TRUNCATE fires no row
-- trigger, so each append-only table also refuses it, statement by
-- statement (a TRUNCATE ... CASCADE reaching one is refused too).
CREATE TRIGGER inventory_flows_no_truncate BEFORE TRUNCATE ON inventory_flows
    FOR EACH STATEMENT EXECUTE FUNCTION reject_append_only_change();
CREATE TRIGGER account_flows_no_truncate BEFORE TRUNCATE ON account_flows
    FOR EACH STATEMENT EXECUTE FUNCTION reject_append_only_change();
CREATE TRIGGER quota_flows_no_truncate BEFORE TRUNCATE ON quota_flows
    FOR EACH STATEMENT EXECUTE FUNCTION reject_append_only_change();
CREATE TRIGGER coupon_flows_no_truncate BEFORE TRUNCATE ON coupon_flows
    FOR EACH STATEMENT EXECUTE FUNCTION reject_append_only_change();
CREATE TRIGGER slot_flows_no_truncate BEFORE TRUNCATE ON slot_flows
    FOR EACH STATEMENT EXECUTE FUNCTION reject_append_only_change();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION reject_append_only_change();

-- A balance never passes models.MaxBalance (10^15, in the asset's smallest
-- unit): Credit refuses a credit that would, and this CHECK holds whatever
-- writes the row.
ALTER TABLE accounts ADD CONSTRAINT accounts_within_max
    CHECK (available <= 1000000000000000 AND frozen <= 1000000000000000 AND spent <= 1000000000000000);

-- +goose Down
ALTER TABLE accounts DROP CONSTRAINT accounts_within_max;
DROP TRIGGER audit_log_no_truncate ON audit_log;
DROP TRIGGER slot_flows_no_truncate ON slot_flows;
DROP TRIGGER coupon_flows_no_truncate ON coupon_flows;
DROP TRIGGER quota_flows_no_truncate ON quota_flows;
DROP TRIGGER account_flows_no_truncate ON account_flows;
DROP TRIGGER inventory_flows_no_truncate ON inventory_flows;
