-- The approved definitions of upstream MCP servers' tools (docs/MCP.md,
-- "Pinned definitions"), one per tool.
-- Additive: a build without it never reads it.
-- min-reader: 14
CREATE TABLE upstream_definitions (
    upstream    TEXT    NOT NULL,
    tool        TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    definition  BLOB    NOT NULL,
    approved_by TEXT    NOT NULL,
    at          INTEGER NOT NULL,
    PRIMARY KEY (upstream, tool)
);
