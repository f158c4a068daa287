-- Retention (--audit-retention) prunes audit events older than a cutoff.
-- The log stays append-only for everything newer: a DELETE is refused
-- unless the event is older than the cutoff in audit_retention, which the
-- pruner raises in the same transaction as its DELETE and which only
-- moves forward. UPDATE stays refused outright (0001).
CREATE TABLE audit_retention (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    cutoff INTEGER NOT NULL
);
INSERT INTO audit_retention (id, cutoff) VALUES (1, 0);

CREATE TRIGGER audit_retention_forward BEFORE UPDATE ON audit_retention
WHEN NEW.cutoff < OLD.cutoff BEGIN
    SELECT RAISE(ABORT, 'the audit retention cutoff only moves forward');
END;

CREATE TRIGGER audit_retention_no_delete BEFORE DELETE ON audit_retention BEGIN
    SELECT RAISE(ABORT, 'the audit retention cutoff cannot be deleted');
END;

DROP TRIGGER audit_events_no_delete;
CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events
WHEN OLD.at >= (SELECT cutoff FROM audit_retention) BEGIN
    SELECT RAISE(ABORT, 'audit_events is append-only');
END;
