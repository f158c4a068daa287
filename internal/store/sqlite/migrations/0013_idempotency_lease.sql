-- The lease of a claimed idempotency key: the call's owner renews it while
-- it runs, so a repeat on another process knows the owner is gone once it
-- lapses (store.IdempotencyRecord.LeaseUntil). Additive: a build without it
-- leaves 0, which is no lease.
-- min-reader: 12
ALTER TABLE idempotency_keys ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0;
