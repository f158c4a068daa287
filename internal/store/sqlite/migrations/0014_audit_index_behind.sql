-- An audit record's cost is an append (docs/BENCHMARKS.md, "The audit
-- as an append, and the write path"; docs/ARCHITECTURE.md, "Audit"):
-- audit_events keeps only its rowid, and the two indexes that
-- list-audit-events walks are built behind the writer, in batches, into
-- tables of their own. audit_indexed holds how far they go: every event
-- with an id up to it has its entries, none after it has any. ListAudit
-- reads the indexed part through them and the tail after the mark straight
-- from audit_events, in one statement, so nothing appended is missed while
-- the indexer catches up. SQLite has one writer at a time, so ids commit
-- in order and the mark is exact.
CREATE TABLE audit_by_tenant (
    tenant TEXT    NOT NULL,
    at     INTEGER NOT NULL,
    id     INTEGER NOT NULL,
    PRIMARY KEY (tenant, at, id)
) WITHOUT ROWID;

CREATE TABLE audit_by_tool (
    tenant TEXT    NOT NULL,
    tool   TEXT    NOT NULL,
    at     INTEGER NOT NULL,
    id     INTEGER NOT NULL,
    PRIMARY KEY (tenant, tool, at, id)
) WITHOUT ROWID;

CREATE TABLE audit_indexed (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    upto INTEGER NOT NULL
);

INSERT INTO audit_by_tenant (tenant, at, id) SELECT tenant, at, id FROM audit_events ORDER BY tenant, at, id;
INSERT INTO audit_by_tool (tenant, tool, at, id) SELECT tenant, tool, at, id FROM audit_events ORDER BY tenant, tool, at, id;
INSERT INTO audit_indexed (id, upto) VALUES (1, (SELECT coalesce(max(id), 0) FROM audit_events));

DROP INDEX audit_events_tenant;
DROP INDEX audit_events_tool;

-- The indexes are as append-only as the log: an entry is never changed,
-- and deleted only with its event, past the retention cutoff (0008); the
-- mark only moves forward.
CREATE TRIGGER audit_by_tenant_no_update BEFORE UPDATE ON audit_by_tenant BEGIN
    SELECT RAISE(ABORT, 'audit_events is append-only');
END;
CREATE TRIGGER audit_by_tenant_no_delete BEFORE DELETE ON audit_by_tenant
WHEN OLD.at >= (SELECT cutoff FROM audit_retention) BEGIN
    SELECT RAISE(ABORT, 'audit_events is append-only');
END;
CREATE TRIGGER audit_by_tool_no_update BEFORE UPDATE ON audit_by_tool BEGIN
    SELECT RAISE(ABORT, 'audit_events is append-only');
END;
CREATE TRIGGER audit_by_tool_no_delete BEFORE DELETE ON audit_by_tool
WHEN OLD.at >= (SELECT cutoff FROM audit_retention) BEGIN
    SELECT RAISE(ABORT, 'audit_events is append-only');
END;
CREATE TRIGGER audit_indexed_forward BEFORE UPDATE ON audit_indexed
WHEN NEW.upto < OLD.upto BEGIN
    SELECT RAISE(ABORT, 'the audit index mark only moves forward');
END;
CREATE TRIGGER audit_indexed_no_delete BEFORE DELETE ON audit_indexed BEGIN
    SELECT RAISE(ABORT, 'the audit index mark cannot be deleted');
END;
