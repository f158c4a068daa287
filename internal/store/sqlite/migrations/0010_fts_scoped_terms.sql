-- The full-text index holds scoped terms (terms.go): each distinct
-- searchable word of a memory, stemmed in Go, prefixed by the memory's
-- scope key, so that a search walks the doclists of its own scopes' words
-- and nothing else. Migration 0002 ANDed a scope column with the words,
-- and each step of that walk skipped over the postings of the caller's
-- scopes that held none of the words: at a million memories most of a
-- search. The table is contentless (the memory's content stays in
-- memories alone), deletes by rowid (contentless_delete), and keeps no
-- positions (detail=none): searches OR and AND single terms, never
-- phrases. unicode61 without diacritic folding only splits the list, whose
-- tokens are lower-case ASCII letters and digits.
DROP TRIGGER memories_fts_insert;
DROP TRIGGER memories_fts_delete;
DROP TRIGGER memories_fts_update;
DROP TABLE memories_fts;

CREATE VIRTUAL TABLE memories_fts USING fts5 (
    terms,
    content = '',
    contentless_delete = 1,
    detail = none,
    tokenize = 'unicode61 remove_diacritics 0'
);

-- As in migration 0002: merge as soon as two segments share a level.
INSERT INTO memories_fts (memories_fts, rank) VALUES ('automerge', 2);

INSERT INTO memories_fts (rowid, terms)
    SELECT seq, toolsvc_memory_terms(scope_key, content) FROM memories ORDER BY seq;

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, terms) VALUES (new.seq, toolsvc_memory_terms(new.scope_key, new.content));
END;

CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    DELETE FROM memories_fts WHERE rowid = old.seq;
END;

CREATE TRIGGER memories_fts_update AFTER UPDATE OF seq, content, tenant, layer, scope_id ON memories BEGIN
    DELETE FROM memories_fts WHERE rowid = old.seq;
    INSERT INTO memories_fts (rowid, terms) VALUES (new.seq, toolsvc_memory_terms(new.scope_key, new.content));
END;
