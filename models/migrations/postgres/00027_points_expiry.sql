-- +goose Up
-- Points expire account by account (docs/stock-models.md, "Points expiry
-- on release"): the account's points are usable until expire_at, NULL for
-- points that never expire; a balance never expires. Each points ledger
-- row states the account's expiry before and after it, so a release or a
-- refund says what the expiry policy did; balance rows leave both NULL.
ALTER TABLE accounts ADD COLUMN expire_at TIMESTAMPTZ;
ALTER TABLE accounts ADD CONSTRAINT accounts_expiry_points
    CHECK (expire_at IS NULL OR asset = 'POINTS');
ALTER TABLE account_flows ADD COLUMN expire_before TIMESTAMPTZ;
ALTER TABLE account_flows ADD COLUMN expire_after TIMESTAMPTZ;
ALTER TABLE account_flows ADD CONSTRAINT account_flows_expiry_points
    CHECK ((expire_before IS NULL AND expire_after IS NULL) OR asset = 'POINTS');

-- +goose Down
-- Going back would lose when points expire: refused while any account or
-- ledger row states an expiry.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM accounts WHERE expire_at IS NOT NULL)
        OR EXISTS (SELECT 1 FROM account_flows WHERE expire_before IS NOT NULL OR expire_after IS NOT NULL) THEN
        RAISE EXCEPTION '00027 down: points have an expiry; refusing to drop it';
    END IF;
END $$;
-- +goose StatementEnd
ALTER TABLE account_flows DROP CONSTRAINT account_flows_expiry_points;
ALTER TABLE account_flows DROP COLUMN expire_after, DROP COLUMN expire_before;
ALTER TABLE accounts DROP CONSTRAINT accounts_expiry_points;
ALTER TABLE accounts DROP COLUMN expire_at;
