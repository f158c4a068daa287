// Package memory implements the memory tools of the built-in suite (docs/ARCHITECTURE.md, Services and tools):
// add-memory, search-memories, delete-memory and summarize-memories, as the
// generated memoryv1.MemoryServiceServer.
//
// Memories live in seven layers with precedence agent > user > session >
// project > team > org > company. The identifier that scopes a layer (agent,
// user, session, project, team or org id, the tenant for company) always
// comes from the caller's credentials and headers, never from arguments: a
// layer whose identifier is unknown cannot be written or explicitly
// searched, and the error says which identifier is missing and how to
// supply it.
//
// Search is lexical by default (see [Score] for the formula) and hybrid when
// an [Embedder] is configured with [WithEmbedder]. Summaries are extractive:
// every bullet quotes its source memory verbatim, and the quote is checked
// against the memory before the result is returned.
package memory
