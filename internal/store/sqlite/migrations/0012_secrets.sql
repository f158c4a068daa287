-- Secrets of the store's own making, shared by every process on the file:
-- "cursor" signs the cursors of paged results (docs/CONTRACTS.md,
-- "Paging"). The result sets themselves stay in the process's memory
-- (pages.go).
CREATE TABLE secrets (
    name  TEXT NOT NULL PRIMARY KEY,
    value BLOB NOT NULL
);
