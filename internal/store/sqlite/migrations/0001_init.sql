-- Memories. seq (the rowid) is the FTS5 content rowid; the
-- public id is unique per tenant only, so an id chosen in one tenant reveals
-- nothing about another. Times are Unix microseconds (UTC).
CREATE TABLE memories (
    seq               INTEGER PRIMARY KEY,
    tenant            TEXT    NOT NULL,
    id                TEXT    NOT NULL,
    layer             TEXT    NOT NULL,
    scope_id          TEXT    NOT NULL,
    content           TEXT    NOT NULL,
    tags              TEXT    NOT NULL DEFAULT '[]',
    metadata          TEXT    NOT NULL DEFAULT '{}',
    source_type       TEXT    NOT NULL,
    knowledge_item_id TEXT,
    content_hash      TEXT    NOT NULL DEFAULT '',
    orphaned          INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    UNIQUE (tenant, id)
);

-- Newest-first listing per scope (searches without terms) reads this index in
-- order and stops early; with orphaned it also covers the capped count.
CREATE INDEX memories_scope ON memories (tenant, layer, scope_id, created_at, id, orphaned);

-- Pointers are keyed by their knowledge item.
CREATE UNIQUE INDEX memories_pointer ON memories (tenant, knowledge_item_id)
    WHERE knowledge_item_id IS NOT NULL;

-- Tags, one row per memory and tag, for indexed "has all tags" filters; the
-- JSON column above is what reads return.
CREATE TABLE memory_tags (
    memory_seq   INTEGER NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
    tenant       TEXT    NOT NULL,
    tag          TEXT    NOT NULL,
    PRIMARY KEY (memory_seq, tag)
) WITHOUT ROWID;

CREATE INDEX memory_tags_tag ON memory_tags (tenant, tag, memory_seq);

-- Full-text index over content, kept in sync by triggers.
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    content,
    content = 'memories',
    content_rowid = 'seq',
    tokenize = 'porter unicode61'
);

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, content) VALUES (new.seq, new.content);
END;

CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content) VALUES ('delete', old.seq, old.content);
END;

CREATE TRIGGER memories_fts_update AFTER UPDATE OF content ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content) VALUES ('delete', old.seq, old.content);
    INSERT INTO memories_fts (rowid, content) VALUES (new.seq, new.content);
END;

CREATE TABLE sync_runs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant       TEXT    NOT NULL,
    started_at   INTEGER NOT NULL,
    duration_ms  INTEGER NOT NULL,
    added        INTEGER NOT NULL,
    updated      INTEGER NOT NULL,
    deleted      INTEGER NOT NULL,
    unchanged    INTEGER NOT NULL,
    failures     INTEGER NOT NULL,
    failed_items TEXT    NOT NULL DEFAULT '[]',
    forced       INTEGER NOT NULL
);

CREATE INDEX sync_runs_tenant ON sync_runs (tenant, started_at, id);

CREATE TABLE item_versions (
    tenant  TEXT    NOT NULL,
    item_id TEXT    NOT NULL,
    version INTEGER NOT NULL,
    hash    TEXT    NOT NULL,
    change  TEXT    NOT NULL,
    author  TEXT    NOT NULL,
    message TEXT    NOT NULL,
    at      INTEGER NOT NULL,
    PRIMARY KEY (tenant, item_id, version)
) WITHOUT ROWID;

CREATE TABLE audit_events (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    at             INTEGER NOT NULL,
    tenant         TEXT    NOT NULL,
    tool           TEXT    NOT NULL,
    tool_version   TEXT    NOT NULL,
    subject        TEXT    NOT NULL,
    trace_id       TEXT    NOT NULL,
    correlation_id TEXT    NOT NULL,
    transport      TEXT    NOT NULL,
    decision       TEXT    NOT NULL,
    reason         TEXT    NOT NULL,
    code           TEXT    NOT NULL,
    latency_ms     REAL    NOT NULL
);

-- Newest-first pages per tenant, optionally narrowed by tool or subject.
CREATE INDEX audit_events_tenant ON audit_events (tenant, at, id);
CREATE INDEX audit_events_tool ON audit_events (tenant, tool, at, id);
CREATE INDEX audit_events_subject ON audit_events (tenant, subject, at, id);

-- The audit log is append-only, for the application and for anyone with a
-- SQL shell alike.
CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events BEGIN
    SELECT RAISE(ABORT, 'audit_events is append-only');
END;

CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events BEGIN
    SELECT RAISE(ABORT, 'audit_events is append-only');
END;
