-- Calls made with an idempotency key (docs/REST.md, Retries and idempotency
-- keys: calling several times = once): the first call claims (principal,
-- key) with the fingerprint of its arguments and stores its response when it
-- succeeds; a repeat is answered from here until expires_at. Kept in the
-- store so that it holds across replicas of one database.
CREATE TABLE idempotency_keys (
    principal   TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    tool        TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    response    BLOB,
    done        INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (principal, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);
