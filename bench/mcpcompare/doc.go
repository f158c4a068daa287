// Package mcpcompare holds the in-process MCP benchmarks that compare
// toolsvc's full chain with bare echo servers of mark3labs/mcp-go and the
// official go-sdk over one loopback HTTP client. They live in the bench
// module so the product module never depends on the frameworks it is
// compared with. The tools/list comparison at 10, 100 and 1,000 tools is
// bench/cmd/compare's.
package mcpcompare
