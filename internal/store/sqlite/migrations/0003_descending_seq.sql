-- Newest first becomes FTS5's cheap direction. A text search walks its
-- matches newest first until the window is full (search.go). With seq
-- growing, that was descending rowid order. FTS5 iterates in that
-- direction by decoding each leaf page backwards, and that made the
-- search slower: when the scope tokens are ANDed with the search terms,
-- each skip over other scopes' postings cost about 1.5 times as much
-- (BenchmarkSearchCommonWords; docs/RELIABILITY.md, "Soak"). From now on
-- each new memory takes the smallest seq less one (memory.go), so newest
-- first is ascending rowid order.
--
-- Existing rows are renumbered seq -> -seq. This reverses their order and
-- keeps them above every new seq. memory_tags is renumbered to match. The
-- writer enforces foreign keys, and PRAGMA foreign_keys is a no-op inside
-- the migrations' transaction. defer_foreign_keys works there: it delays
-- the check of memory_tags' reference until the commit, when both tables
-- agree again (the check still runs then, and the pragma resets at the
-- commit). The full-text triggers do not watch seq, so the index still
-- has the old rowids and is rebuilt. The rebuild keeps the automerge
-- setting of migration 0002.
PRAGMA defer_foreign_keys = ON;

UPDATE memories SET seq = -seq;
UPDATE memory_tags SET memory_seq = -memory_seq;

INSERT INTO memories_fts (memories_fts) VALUES ('rebuild');
