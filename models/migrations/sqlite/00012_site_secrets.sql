-- +goose Up
-- Secrets every instance on this database shares, made once by the first
-- instance that needs one (see Store.SiteSecret): 'csrf' keys the HMAC
-- that binds a CSRF token to its session, so a token one instance issued
-- holds on the others. value is base64url.
CREATE TABLE site_secrets (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- +goose Down
DROP TABLE site_secrets;
