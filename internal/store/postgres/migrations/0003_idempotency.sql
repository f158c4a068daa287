-- Calls made with an idempotency key (docs/REST.md, Retries and idempotency
-- keys: calling several times = once): the first call claims (principal,
-- key) with the fingerprint of its arguments and stores its response when it
-- succeeds; a repeat is answered from here until expires_at. Kept in the
-- store so that it holds across replicas.
CREATE TABLE idempotency_keys (
    principal   text        NOT NULL,
    key         text        NOT NULL,
    tool        text        NOT NULL,
    fingerprint text        NOT NULL,
    response    bytea,
    done        boolean     NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (principal, key)
);
CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);
