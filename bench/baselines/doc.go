// Package baselines are the bare frameworks toolsvc is built on, each doing
// the same trivial work, an echo of a small message, so that a load run can
// put every toolsvc figure beside what the framework alone achieves:
//
//   - a bare grpc-go unary server;
//   - bare grpc-gateway, its mux calling a bare grpc-go server over bufconn
//     (in-process) or over a loopback TCP connection;
//   - bare MCP Streamable HTTP servers with the official go-sdk and with
//     mark3labs/mcp-go, stateless and stateful, each exposing an echo tool.
//
// They live in the bench module so their dependencies never enter the
// product's go.mod.
package baselines
