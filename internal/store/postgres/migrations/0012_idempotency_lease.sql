-- The lease of a claimed idempotency key: the call's owner renews it while
-- it runs, so a repeat on another replica knows the owner is gone once it
-- lapses (store.IdempotencyRecord.LeaseUntil). Additive: a build without it
-- leaves it NULL (or an earlier claim's, before its created_at), which is
-- no lease.
-- min-reader: 10
ALTER TABLE idempotency_keys ADD COLUMN lease_until timestamptz;
