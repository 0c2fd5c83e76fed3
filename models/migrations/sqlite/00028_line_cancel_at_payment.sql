-- +goose Up
-- A line deducted at payment may be cancelled whole before its payment
-- (docs/order-life.md): what it orders goes down to 0, and the payment
-- then takes nothing. ordered > 0 widens to ordered >= 0 by editing the
-- table's text in sqlite_schema, as 00023 and 00024 did (a wider CHECK
-- accepts every stored row); the CREATE TABLE after RESET changes the
-- schema cookie, so every other connection reloads the schema, and the
-- guard fails the migration if the text was not found.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql, 'ordered > 0 AND qty IN (0, ordered)', 'ordered >= 0 AND qty IN (0, ordered)')
    WHERE type = 'table' AND name = 'order_holds';
PRAGMA writable_schema = RESET;
CREATE TABLE up_00028_guard (n INTEGER CHECK (n = 0));
INSERT INTO up_00028_guard SELECT COUNT(*) FROM sqlite_schema
    WHERE type = 'table' AND name = 'order_holds' AND sql NOT LIKE '%ordered >= 0 AND qty IN (0, ordered)%';
DROP TABLE up_00028_guard;

-- +goose Down
-- Refused while a line is cancelled whole: it would break ordered > 0.
CREATE TABLE down_00028_guard (n INTEGER CHECK (n = 0));
INSERT INTO down_00028_guard SELECT COUNT(*) FROM order_holds WHERE deduct_at = 'payment' AND ordered = 0;
DROP TABLE down_00028_guard;
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql, 'ordered >= 0 AND qty IN (0, ordered)', 'ordered > 0 AND qty IN (0, ordered)')
    WHERE type = 'table' AND name = 'order_holds';
PRAGMA writable_schema = RESET;
CREATE TABLE down_00028_cookie (n INTEGER);
DROP TABLE down_00028_cookie;
