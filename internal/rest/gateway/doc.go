// Package gateway is toolsvc's REST transport: grpc-gateway handlers for
// every service (ToolService and each tool domain), the /api/mcp (docs/REST.md, Routes)
// routes, and the OpenAPI document at /openapi.json.
//
// The gateway is a client of the one gRPC server: every call goes through
// the in-process channel, so it passes the same interceptor chain as a
// network gRPC call (docs/ARCHITECTURE.md). Only the allowlisted headers
// (wire.ForwardedHeaders) become gRPC metadata; everything else,
// cookies included, is dropped. Errors are the ToolError of the chain as
// {"error": {...}} with the HTTP status of docs/ARCHITECTURE.md's error table, and bad input
// (malformed JSON, unknown fields, wrong types, oversized or slow bodies,
// unsupported media types, unknown routes and methods) is always a 4xx
// naming the problem, never a 500.
package gateway
