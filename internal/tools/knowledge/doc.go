// Package knowledge implements the knowledge tools of the built-in suite (docs/ARCHITECTURE.md, Services and tools):
// query-knowledge, show-knowledge and check-knowledge, as the generated
// knowledgev1.KnowledgeServiceServer, over a directory of Markdown items
// (package internal/tools/knowledge/kb) that a [Dir] loads and reloads.
//
// Every tool answers from the caller's knowledge: the set of its tenant
// (kb.Library.For) seen through its org, team and project ids
// (kb.Viewer). An item another tenant or owner holds is absent:
// show-knowledge answers NOT_FOUND exactly as for an id that does not exist,
// query-knowledge does not find it, check-knowledge does not apply it and
// reports a named one as unknown, and no item names it as its successor.
// Sync history (show-knowledge's includeHistory) is read from the store for
// the caller's tenant only. In development mode (no auth file) the one
// principal sees every item.
package knowledge
