// Package mcpclients proves toolsvc with the two Go MCP client libraries,
// the official go-sdk and mark3labs/mcp-go, in revision 2026-07-28: each
// connects to a real `toolsvc serve` (Streamable HTTP, with sessions and
// stateless) and to `toolsvc mcp` (stdio), must negotiate 2026-07-28 with
// no fallback to the initialize handshake, lists every tool, calls each
// one with its first example and checks the structured content against the
// tool's outputSchema, and reads a knowledge resource. It lives in the
// bench module so the product module never depends on either library;
// `make bench-test` (CI) runs it.
package mcpclients
