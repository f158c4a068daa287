-- An audit record's cost is an append (docs/BENCHMARKS.md, "The audit
-- as an append, and the write path"; docs/ARCHITECTURE.md, "Audit"): the
-- writer appends to audit_incoming, a heap without any index, and the
-- indexer moves its rows into audit_events (and its indexes) behind the
-- writer, in batches, inserting and deleting in one transaction. ListAudit
-- reads both tables in one statement, so one snapshot: an event is in
-- exactly one of them. Ids come from audit_events' own sequence, so they
-- stay unique and keep their order across the move.
DO $$
BEGIN
    EXECUTE format($f$
        CREATE TABLE audit_incoming (
            id             bigint NOT NULL DEFAULT nextval(%L),
            at             timestamptz NOT NULL,
            tenant         text COLLATE "C" NOT NULL,
            tool           text NOT NULL,
            tool_version   text NOT NULL,
            subject        text NOT NULL,
            trace_id       text NOT NULL,
            correlation_id text NOT NULL,
            transport      text NOT NULL,
            decision       text NOT NULL,
            reason         text NOT NULL,
            code           text NOT NULL,
            latency_ms     double precision NOT NULL
        )$f$, pg_get_serial_sequence('audit_events', 'id'));
END;
$$;

-- audit_incoming is as append-only as the log: a row is never changed,
-- and deleted only once its copy is in audit_events (the indexer's move,
-- in the same transaction).
CREATE FUNCTION audit_incoming_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF EXISTS (SELECT 1 FROM audit_events WHERE id = OLD.id) THEN
            RETURN OLD;
        END IF;
    END IF;
    RAISE EXCEPTION 'audit_events is append-only';
END;
$$;

CREATE TRIGGER audit_incoming_no_change BEFORE UPDATE OR DELETE ON audit_incoming
    FOR EACH ROW EXECUTE FUNCTION audit_incoming_append_only();

CREATE TRIGGER audit_incoming_no_truncate BEFORE TRUNCATE ON audit_incoming
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only();
