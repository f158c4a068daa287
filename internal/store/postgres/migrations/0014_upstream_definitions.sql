-- The approved definitions of upstream MCP servers' tools (docs/MCP.md,
-- "Pinned definitions"), one per tool, shared by the fleet.
-- Additive: a build without it never reads it.
-- min-reader: 13
CREATE TABLE upstream_definitions (
    upstream    TEXT        NOT NULL,
    tool        TEXT        NOT NULL,
    fingerprint TEXT        NOT NULL,
    definition  BYTEA       NOT NULL,
    approved_by TEXT        NOT NULL,
    at          TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (upstream, tool)
);
