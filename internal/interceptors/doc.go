// Package interceptors is toolsvc's one interceptor chain. Every call, from
// any transport (gRPC on the network, MCP and REST through the in-process
// channel), passes Chain exactly once; see chain.go for the order and why.
//
// Each concern is one file: boundary (panics and the error mapping), resolve
// (which tool, which typed request, the facts the request states), observe
// (logs, metrics, traces), audit, auth, policy (tenant, permissions,
// read-only, deprecation), ratelimit, deadline, validate, result (metadata
// and the post-execution contract check) and cache. The state of a call
// (call.go) is the chain's own; what leaves it is the call's
// callctx.Facts and callctx.Admission. Config (config.go) has its defaults
// in SetDefaults. The audit writer the audit step hands records to is
// internal/store/auditlog.
package interceptors
