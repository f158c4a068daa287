// Package knowledgesync implements the sync tools of the built-in suite (docs/ARCHITECTURE.md, Services and tools): sync-knowledge, which
// keeps one pointer memory per knowledge item in the item's layer, and
// get-sync-status, as the generated syncv1.SyncServiceServer.
//
// A caller syncs the knowledge it sees (package internal/tools/knowledge/kb,
// Viewer): the items of its own tenant whose owner matches its org, team
// or project id, into that tenant's memory. Items it does not see are
// neither written nor retired, and only its own tenant's load errors are
// reported to it.
//
// Pointers are keyed by (tenant, knowledge item id). Change detection uses
// the item's content hash (content, constraints, status and the other
// front-matter fields); a forced sync rewrites every pointer in place, so it
// never duplicates one. The pointer of an item whose file disappeared is
// marked orphaned; the pointer of an item whose file is now malformed is
// left alone, since the item may still exist.
//
// Pointers are memories, so with an embeddings provider (WithMemoryEmbedder)
// the pointers a sync writes are embedded when it ends, as add-memory
// embeds its memory: batched, within half the call's time left; if the
// provider fails the sync still succeeds, says so in its hints, and the
// memory tools' background filler embeds the pointers later.
package knowledgesync
