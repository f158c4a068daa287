-- The keys toolsvc signs its identity assertions to upstreams with, shared
-- by every replica, and callers' own credentials for upstreams, sealed by
-- toolsvc with the operator's key (docs/OPERATIONS.md, "Identity of
-- callers to upstreams").
-- Additive: a build without it never reads it.
-- min-reader: 13
CREATE TABLE signing_keys (
    id         TEXT        NOT NULL PRIMARY KEY,
    alg        TEXT        NOT NULL,
    private    BYTEA       NOT NULL,
    not_before TIMESTAMPTZ NOT NULL,
    not_after  TIMESTAMPTZ NOT NULL
);

CREATE TABLE user_credentials (
    tenant     TEXT        NOT NULL,
    subject    TEXT        NOT NULL,
    upstream   TEXT        NOT NULL,
    sealed     BYTEA       NOT NULL,
    key_id     TEXT        NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant, subject, upstream)
);
