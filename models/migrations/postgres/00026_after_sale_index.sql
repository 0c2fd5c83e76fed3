-- +goose Up
-- Reconciliation's LINE_AFTER_SALE check (models/recon_lines.go) sums, key
-- by key, what order lines refunded, restocked and wrote off. Few lines
-- ever do: this partial index holds only those, so the check reads them
-- alone instead of every line of the type. A line edited by hand back to
-- nothing leaves the index, and its key's sum then falls short of the
-- ledger's, which is what the check looks for.
CREATE INDEX order_holds_after_sale ON order_holds (resource_type, biz_key, refunded, restocked, written_off)
    WHERE refunded + restocked + written_off > 0;

-- +goose Down
DROP INDEX order_holds_after_sale;
