-- Retention (--audit-retention) prunes audit events older than a cutoff.
-- The log stays append-only for everything newer: a DELETE is refused
-- unless the event is older than the cutoff in audit_retention, which the
-- pruner raises in the same transaction as its DELETE and which only
-- moves forward. UPDATE and TRUNCATE stay refused outright (0001).
CREATE TABLE audit_retention (
    id     boolean PRIMARY KEY DEFAULT true CHECK (id),
    cutoff timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO audit_retention DEFAULT VALUES;

CREATE FUNCTION audit_retention_forward() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' OR NEW.cutoff < OLD.cutoff THEN
        RAISE EXCEPTION 'the audit retention cutoff only moves forward';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER audit_retention_forward BEFORE UPDATE OR DELETE ON audit_retention
    FOR EACH ROW EXECUTE FUNCTION audit_retention_forward();

CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.at < (SELECT cutoff FROM audit_retention) THEN
            RETURN OLD;
        END IF;
    END IF;
    RAISE EXCEPTION 'audit_events is append-only';
END;
$$;
