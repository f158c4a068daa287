// Package knowledge implements the knowledge tools of seed 002:
// query-knowledge, show-knowledge and check-knowledge, as the generated
// knowledgev1.KnowledgeServiceServer, over a directory of Markdown items
// (package internal/knowledge) that a [Dir] loads and reloads.
//
// Knowledge items are shared by every tenant of the server; what is tenant
// scoped is their sync history (show-knowledge's includeHistory), read from
// the store for the caller's tenant only.
package knowledge
