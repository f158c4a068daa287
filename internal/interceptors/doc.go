// Package interceptors is toolsvc's one interceptor chain. Every call, from
// any transport (gRPC on the network, MCP and REST through the in-process
// channel), passes Chain exactly once; see chain.go for the order and why.
//
// Each concern is one file: boundary (panics and the error mapping), resolve
// (which tool, which typed request, the ToolContext), observe (logs,
// metrics, traces), audit, auth, policy (tenant, permissions, read-only,
// deprecation), ratelimit, deadline, validate, result (metadata and the
// post-execution contract check) and cache.
package interceptors
