-- The results of a search beyond its first page, kept so that its cursor
-- pages through exactly that result set (docs/CONTRACTS.md, "Paging").
CREATE TABLE result_pages (
    id         TEXT    NOT NULL PRIMARY KEY,
    principal  TEXT    NOT NULL,
    query      TEXT    NOT NULL,
    key        BLOB    NOT NULL,
    items      BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX result_pages_expires ON result_pages (expires_at);
