-- The full-text list of each memory also holds its near-duplicate keys
-- (terms.go, writeNearKey; store.NearDuplicateKeys): a signature of its
-- term set when it is small, else the first terms of the set that any
-- near-duplicate shares, so that add-memory finds the near-duplicates of a
-- new memory by looking up one or two tokens instead of searching for all
-- of its words. The trigger function toolsvc_memory_terms writes them from
-- this build on; the index is filled again here so that memories written
-- before have theirs.
-- min-reader: 14
-- A build before this one still reads and writes the database: the
-- memories it writes lack their keys (they are not found as
-- near-duplicates until their content changes), which costs a warning,
-- not a wrong answer.
INSERT INTO memories_fts (memories_fts) VALUES ('delete-all');
INSERT INTO memories_fts (rowid, terms)
    SELECT seq, toolsvc_memory_terms(scope_key, content) FROM memories ORDER BY seq;
