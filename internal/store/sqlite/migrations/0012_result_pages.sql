-- The results of a search beyond its first page, kept so that its cursor
-- pages through exactly that result set (docs/CONTRACTS.md, "Paging").
CREATE TABLE result_pages (
    id         TEXT    NOT NULL PRIMARY KEY,
    principal  TEXT    NOT NULL,
    query      TEXT    NOT NULL,
    items      BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX result_pages_expires ON result_pages (expires_at);

-- Secrets of the store's own making, shared by every replica: "cursor"
-- signs the cursors of paged results.
CREATE TABLE secrets (
    name  TEXT NOT NULL PRIMARY KEY,
    value BLOB NOT NULL
);
