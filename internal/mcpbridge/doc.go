// Package mcpbridge serves toolsvc's tools to agents over the Model Context
// Protocol: revision 2026-07-28 per request (no handshake, _meta on every
// request) beside revision 2025-11-25 (2025-06-18 and 2025-03-26 are
// negotiated too) on the same endpoint: JSON-RPC 2.0 over Streamable HTTP
// (ServeHTTP) and over stdio (ServeStdio). Every message is read strictly
// first (internal/base/jsonrpc): duplicated or inexact keys are refused. In
// the modern era, subscriptions/listen streams hear tool-list changes
// (listen.go) and a tool whose contract is slow runs as a task of the
// Tasks extension (tasks.go), its work a tools/call through the chain like
// any other.
//
// The MCP transport is this package and its subpackages, by concern, the
// way the Go MCP SDK and connect-go keep a transport apart from the
// server:
//   - framing: the messages on the wire (codes, the strict read, the
//     response and batch writers) and the one JSON string writer; it
//     knows no revision, session or transport;
//   - streamhttp: Streamable HTTP's wire: headers, the Origin and Host
//     guard, Accept and media type, the body bound, errors with a status,
//     event streams;
//   - stdio: the stdio transport (lines in, lines out, requests run
//     concurrently), serving a Session this package opens (stdioconn.go);
//   - this package: the server. Streamable HTTP's requests (http.go: the
//     credential check, sessions, the answer's form) and stdio's messages
//     meet in one admission (admit, revision.go), where a request's
//     revision is chosen once and every check of it runs once; then
//     dispatch by method (dispatch.go). The server stays here, with
//     Streamable HTTP's request flow, because both need the sessions,
//     the listeners and the questions in flight, which are the server's.
//
// Its files:
//   - bridge.go: the Bridge and its background work (Run); config.go: its
//     Config, defaults (SetDefaults) and Validate;
//   - dispatch.go: one message's exchange, its envelope, dispatch by
//     method, initialize, logging and cancellation;
//   - revision.go: admission and every difference between the 2025 and
//     2026-07-28 eras (the revision interface: legacy, modern);
//   - http.go: Streamable HTTP's requests; stdioconn.go: a stdio
//     connection; batch.go: JSON-RPC batches;
//   - session.go, sessionshare.go: 2025 sessions, shared across replicas;
//   - tools.go, rendered.go, pages.go, compact.go,
//     outputschema.go, resources.go, prompts.go: the catalog (tools/list,
//     tools/call and its result's JSON, resources, prompts);
//   - ask.go, mrtr.go: questions to the client (2025 streams, 2026
//     input_required); tasks.go, taskstore.go: the Tasks extension;
//     listen.go, subscribe.go: subscriptions/listen and resource
//     subscriptions.
//
// The bridge is a client of the one gRPC server (docs/ARCHITECTURE.md): tools/call
// decodes the JSON arguments straight into the tool's typed request and
// invokes the tool's gRPC method on the in-process channel, so the whole
// interceptor chain (auth, policy, rate limits, validation, cache, audit,
// logs, metrics) runs exactly as for a gRPC caller. It never calls a tool
// implementation itself. Resources come from the providers the tool
// packages register with their services (internal/contract/resource), which
// read through the same channel; the bridge knows their URI schemes, not
// their tools.
//
// The protocol layer is hand-written rather than taken from an MCP library:
// encoding/json decodes only the envelope (params stay json.RawMessage), and
// structuredContent is protojson straight from the typed response, which
// keeps a tools/call through the full chain faster than a bare library echo
// server (docs/BENCHMARKS-mcp.md).
package mcpbridge
