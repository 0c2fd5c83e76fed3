-- +goose Up
-- Points expire account by account (docs/stock-models.md, "Points expiry
-- on release"): the account's points are usable until expire_at, NULL for
-- points that never expire; a balance never expires. Each points ledger
-- row states the account's expiry before and after it, so a release or a
-- refund says what the expiry policy did; balance rows leave both NULL. Nullable
-- columns are added in place; each CHECK is its own column's, so that
-- DROP COLUMN can take it away again.
ALTER TABLE accounts ADD COLUMN expire_at DATETIME CHECK (expire_at IS NULL OR asset = 'POINTS');
ALTER TABLE account_flows ADD COLUMN expire_before DATETIME CHECK (expire_before IS NULL OR asset = 'POINTS');
ALTER TABLE account_flows ADD COLUMN expire_after DATETIME CHECK (expire_after IS NULL OR asset = 'POINTS');

-- +goose Down
-- Going back would lose when points expire: refused while any account or
-- ledger row states an expiry.
CREATE TEMP TABLE down_00027_guard (n INTEGER CHECK (n = 0));
INSERT INTO down_00027_guard SELECT (SELECT COUNT(*) FROM accounts WHERE expire_at IS NOT NULL)
    + (SELECT COUNT(*) FROM account_flows WHERE expire_before IS NOT NULL OR expire_after IS NOT NULL);
DROP TABLE down_00027_guard;
ALTER TABLE account_flows DROP COLUMN expire_after;
ALTER TABLE account_flows DROP COLUMN expire_before;
ALTER TABLE accounts DROP COLUMN expire_at;
