-- Searches are bounded by scope inside the full-text index. Each memory's
-- tenant, layer and scope id become one token (scope_key, a virtual
-- column: 'k' and the lower-case hex of the three joined by U+001F) in a
-- second FTS5 column, so a MATCH that ANDs the caller's scope tokens never
-- walks the postings of other scopes and tenants: without it, a user
-- searching words everyone uses walked every user's memories. The join to
-- memories still checks tenant, layer and scope exactly; the token only
-- narrows.
ALTER TABLE memories ADD COLUMN scope_key TEXT
    GENERATED ALWAYS AS ('k' || lower(hex(tenant || char(31) || layer || char(31) || scope_id))) VIRTUAL;

DROP TRIGGER memories_fts_insert;
DROP TRIGGER memories_fts_delete;
DROP TRIGGER memories_fts_update;
DROP TABLE memories_fts;

CREATE VIRTUAL TABLE memories_fts USING fts5 (
    content,
    scope_key,
    content = 'memories',
    content_rowid = 'seq',
    tokenize = 'porter unicode61'
);

INSERT INTO memories_fts (memories_fts) VALUES ('rebuild');

-- Every add commits its own transaction, and FTS5 writes one index
-- segment per transaction; a query opens an iterator per term and segment.
-- Merging as soon as two segments share a level keeps their number, and
-- so the cost of a query, logarithmic in the number of memories.
INSERT INTO memories_fts (memories_fts, rank) VALUES ('automerge', 2);

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, content, scope_key) VALUES (new.seq, new.content, new.scope_key);
END;

CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, scope_key) VALUES ('delete', old.seq, old.content, old.scope_key);
END;

CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, tenant, layer, scope_id ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, scope_key) VALUES ('delete', old.seq, old.content, old.scope_key);
    INSERT INTO memories_fts (rowid, content, scope_key) VALUES (new.seq, new.content, new.scope_key);
END;
