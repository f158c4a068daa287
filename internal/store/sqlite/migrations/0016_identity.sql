-- The keys toolsvc signs its identity assertions to upstreams with, shared
-- by every process on the file, and callers' own credentials for
-- upstreams, sealed by toolsvc with the operator's key
-- (docs/OPERATIONS.md, "Identity of callers to upstreams").
-- Additive: a build without it never reads it.
-- min-reader: 14
CREATE TABLE signing_keys (
    id         TEXT    NOT NULL PRIMARY KEY,
    alg        TEXT    NOT NULL,
    private    BLOB    NOT NULL,
    not_before INTEGER NOT NULL,
    not_after  INTEGER NOT NULL
);

CREATE TABLE user_credentials (
    tenant     TEXT    NOT NULL,
    subject    TEXT    NOT NULL,
    upstream   TEXT    NOT NULL,
    sealed     BLOB    NOT NULL,
    key_id     TEXT    NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, subject, upstream)
);
