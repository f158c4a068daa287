-- Each principal and tenant has a bounded share of the saved result sets
-- (store.PrincipalPagesShare), so that one caller's searches cannot fill
-- the table or expire another's cursors: a save trims the sets of whoever
-- is over a share, counting each set's size. Additive: a build without it
-- writes rows with tenant '' and size 0, which only their expiry removes.
-- min-reader: 10
ALTER TABLE result_pages ADD COLUMN tenant text NOT NULL DEFAULT '';
ALTER TABLE result_pages ADD COLUMN size integer NOT NULL DEFAULT 0;
CREATE INDEX result_pages_owner ON result_pages (tenant, principal, expires_at);
