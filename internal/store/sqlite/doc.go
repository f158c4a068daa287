// Package sqlite implements store.Store in a single SQLite file, using the
// pure-Go driver modernc.org/sqlite (no cgo). It is the embedded default: no
// set-up, one process.
//
// Durability: the database runs in WAL mode with synchronous=FULL, so a
// write is on disk before the call that made it returns and survives a
// crash of the process. Writes go through a single connection (SQLite
// allows one writer at a time; queueing in Go avoids SQLITE_BUSY), reads
// through a pool of read-only connections that WAL lets run alongside the
// writer. Foreign keys are on; busy_timeout covers other processes opening
// the same file. Concurrent AddMemory calls are committed together, one
// transaction and one fsync for all those queued when the writer's turn
// comes (groupadd.go).
//
// Full-text search is a contentless FTS5 table of scoped terms (each
// distinct stemmed word of a memory prefixed by its scope's key, made in Go
// by package words, terms.go), kept in sync by triggers; the newest
// matches in scope are ranked by BM25 in Go (see SearchMemories). The same
// lists hold each memory's near-duplicate keys (store.NearDuplicateKeys),
// which add-memory looks up (NearDuplicateCandidates). A
// checkpointer on its own connection copies the WAL back four times a
// second and starts it over past 1,000 frames, while readers never stop.
package sqlite
