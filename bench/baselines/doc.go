// Package baselines are the bare frameworks toolsvc is built on, so that a
// load run can put every toolsvc figure beside what the framework alone
// achieves. Most do the same trivial work, an echo of a small message:
//
//   - a bare grpc-go unary server;
//   - bare grpc-gateway, its mux calling a bare grpc-go server over bufconn
//     (in-process) or over a loopback TCP connection;
//   - bare MCP Streamable HTTP servers with the official go-sdk and with
//     mark3labs/mcp-go, stateless and stateful, each exposing an echo tool.
//
// One does the same work as toolsvc's benchmarked call, so that the ratio
// to it is the cost of toolsvc's interceptor chain alone: a bare grpc-go
// server (default options, no interceptors) serving the product's
// get-sync-status implementation (internal/tools/knowledgesync) over its own SQLite
// store, opened as `toolsvc serve` opens its store and seeded alike
// (OpenSyncStatusStore, SeedSyncStatus).
//
// They live in the bench module so their dependencies never enter the
// product's go.mod.
package baselines
