-- The results of a search beyond its first page, kept so that its cursor
-- pages through exactly that result set on any replica (docs/CONTRACTS.md,
-- "Paging"). UNLOGGED: a set lives 15 minutes and a crash may lose it (its
-- cursor is then answered as expired), so its writes skip the WAL.
CREATE UNLOGGED TABLE result_pages (
    id         text        NOT NULL PRIMARY KEY,
    principal  text        NOT NULL,
    query      text        NOT NULL,
    items      bytea       NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX result_pages_expires ON result_pages (expires_at);

-- Secrets of the store's own making, shared by every replica: "cursor"
-- signs the cursors of paged results.
CREATE TABLE secrets (
    name  text NOT NULL PRIMARY KEY,
    value bytea NOT NULL
);
